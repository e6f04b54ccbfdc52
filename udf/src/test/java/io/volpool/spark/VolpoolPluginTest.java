package io.volpool.spark;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.Backend;
import io.volpool.conf.Device;
import io.volpool.conf.ExecutorSettings;
import io.volpool.exec.ExecutorRuntime;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.junit.jupiter.api.Test;

class VolpoolPluginTest {
  private static final ExecutorSettings CPU = new ExecutorSettings(Device.CPU, 0, 1, 0.5, 64L << 20, 0, 1 << 16);

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
    Backend before = ExecutorRuntime.of(CPU).backend();
    assertThat(ExecutorRuntime.of(CPU).backend()).as("cached").isSameAs(before);
    ExecutorPlugin p = new VolpoolPlugin().executorPlugin();
    p.init(context("1", new SparkConf(false).set("spark.volpool.device", "cpu")), Map.of());
    p.shutdown();
    assertThat(ExecutorRuntime.of(CPU).backend()).as("a new backend after the executor's shutdown").isNotSameAs(before);
  }

  @Test
  void theDriversPluginInLocalModeLeavesTheJobsBackendsAlone() {
    Backend before = ExecutorRuntime.of(CPU).backend();
    ExecutorPlugin p = new VolpoolPlugin().executorPlugin();
    p.init(context("driver", new SparkConf(false)), Map.of());
    p.shutdown();
    assertThat(ExecutorRuntime.of(CPU).backend()).isSameAs(before);
  }
}
