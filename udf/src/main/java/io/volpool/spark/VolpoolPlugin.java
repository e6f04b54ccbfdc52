package io.volpool.spark;

import io.volpool.conf.VolpoolOptions;
import io.volpool.exec.ExecutorRuntime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.apache.spark.resource.ResourceInformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;

/**
 * Warm executors ({@code spark.plugins=io.volpool.spark.VolpoolPlugin}): when an executor starts,
 * before tasks arrive, it opens the executor's GPUs (CUDA context, kernels) and allocates the
 * pinned pool ({@code spark.volpool.gpu.pinnedPool.size}) on a thread of its own, as spark-rapids
 * does with its pinned pool, so the first tasks do not pay for them. The settings are the job's
 * {@code spark.volpool.*} keys as the executor sees them. In local mode the job does the same
 * when it starts, with the settings it resolved; the plugin then does nothing. When the executor stops,
 * the plugin closes its backends. No driver side.
 */
public final class VolpoolPlugin implements SparkPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(VolpoolPlugin.class);

  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new ExecutorPlugin() {
      @Override
      public void init(PluginContext ctx, Map<String, String> extraConf) {
        // the executor's gauges in Spark's metrics system (its sinks: Prometheus servlet, JMX, CSV), as
        // plugin.io.volpool.spark.VolpoolPlugin.NAME
        com.codahale.metrics.MetricRegistry registry = ctx.metricRegistry();
        if (registry != null) {
          ExecutorCounters.gauges().forEach((name, value) -> registry.register(name,
              (com.codahale.metrics.Gauge<Long>) value::getAsLong));
        }
        if ("driver".equals(ctx.executorID())) {
          LOG.info("volpool plugin: local mode, the job warms the backend when it starts");
          return;
        }
        warm(ctx.conf(), ctx.resources());
        started = true;
      }

      private boolean started;

      /** The executor is stopping: its backends give back their GPU contexts, device and pinned memory in order. */
      @Override
      public void shutdown() {
        if (started) {
          ExecutorRuntime.shutdown();
          LOG.info("volpool plugin: executor stopping, backends closed");
        }
      }
    };
  }

  /** Starts the warm-up for {@code conf} and this executor's {@code resources}; null when there is nothing to warm. */
  static Thread warm(SparkConf conf, Map<String, ResourceInformation> resources) {
    Map<String, String> values = new HashMap<>();
    for (Tuple2<String, String> kv : conf.getAllWithPrefix(VolpoolOptions.PREFIX)) {
      values.put(VolpoolOptions.PREFIX + kv._1(), kv._2());
    }
    io.volpool.conf.ExecutorSettings s = io.volpool.conf.ExecutorSettings.parse(values);
    io.volpool.conf.Device device = s.device();
    if (device == io.volpool.conf.Device.CPU) {
      LOG.info("volpool plugin: {}=cpu, nothing to warm", VolpoolOptions.DEVICE.key());
      return null;
    }
    List<String> gpus = new ArrayList<>();
    ResourceInformation gpu = resources == null ? null : resources.get("gpu");
    if (gpu != null) {
      gpus.addAll(List.of(gpu.addresses()));
    }
    return ExecutorRuntime.start(s, gpus);
  }
}
