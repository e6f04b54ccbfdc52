package io.volpool.spark;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.Backend;
import io.volpool.conf.Device;
import io.volpool.exec.Backends;
import io.volpool.memory.MemoryBudget;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.junit.jupiter.api.Test;

class VolpoolPluginTest {
  static PluginContext context(String executorId, SparkConf conf) {
    return (PluginContext) java.lang.reflect.Proxy.newProxyInstance(PluginContext.class.getClassLoader(),
        new Class<?>[] {PluginContext.class}, (proxy, m, args) -> switch (m.getName()) {
          case "executorID" -> executorId;
          case "conf" -> conf;
          case "resources" -> Map.of();
          default -> null;
        });
  }

  @Test
  void anExecutorsShutdownClosesItsBackends() {
    MemoryBudget budget = new MemoryBudget(64L << 20);
    Backend before = Backends.get(Device.CPU, 1, 0.5, budget);
    assertThat(Backends.get(Device.CPU, 1, 0.5, budget)).as("cached").isSameAs(before);
    ExecutorPlugin p = new VolpoolPlugin().executorPlugin();
    p.init(context("1", new SparkConf(false).set("spark.volpool.device", "cpu")), Map.of());
    p.shutdown();
    assertThat(Backends.get(Device.CPU, 1, 0.5, budget)).as("a new backend after the executor's shutdown").isNotSameAs(before);
  }

  @Test
  void theDriversPluginInLocalModeLeavesTheJobsBackendsAlone() {
    MemoryBudget budget = new MemoryBudget(64L << 20);
    Backend before = Backends.get(Device.CPU, 1, 0.5, budget);
    ExecutorPlugin p = new VolpoolPlugin().executorPlugin();
    p.init(context("driver", new SparkConf(false)), Map.of());
    p.shutdown();
    assertThat(Backends.get(Device.CPU, 1, 0.5, budget)).isSameAs(before);
  }
}
