package io.volpool.spark;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What this executor JVM's tasks did, for Spark's metrics system (the plugin's gauges: Prometheus,
 * JMX, CSV): volumes (rows, for volumes across rows) and bytes read, volumes and bytes written, tasks
 * finished, the memory budget; and its backend's gauges ({@link io.volpool.backend.Backend#metrics}:
 * GPU kernel and busy time, device and pinned memory). Added where the job's accumulators are, by each
 * task as it reads and when it ends; read by any thread.
 */
public final class ExecutorCounters {
  static final AtomicLong VOLUMES_READ = new AtomicLong();
  static final AtomicLong BYTES_READ = new AtomicLong();
  static final AtomicLong VOLUMES_WRITTEN = new AtomicLong();
  static final AtomicLong BYTES_WRITTEN = new AtomicLong();
  static final AtomicLong TASKS = new AtomicLong();

  private ExecutorCounters() {}

  /** The gauges, by the name the metrics system shows after the plugin's source name. */
  static java.util.Map<String, java.util.function.LongSupplier> gauges() {
    java.util.Map<String, java.util.function.LongSupplier> g = new java.util.LinkedHashMap<>();
    g.put("volumesRead", VOLUMES_READ::get);
    g.put("bytesRead", BYTES_READ::get);
    g.put("volumesWritten", VOLUMES_WRITTEN::get);
    g.put("bytesWritten", BYTES_WRITTEN::get);
    g.put("tasksFinished", TASKS::get);
    g.put("budgetBytesInUse", () -> {
      io.volpool.memory.MemoryBudget b = io.volpool.memory.MemoryBudget.jvmOrNull();
      return b == null ? 0 : b.used();
    });
    g.put("budgetBytesPeak", () -> {
      io.volpool.memory.MemoryBudget b = io.volpool.memory.MemoryBudget.jvmOrNull();
      return b == null ? 0 : b.peak();
    });
    g.put("budgetBytesLimit", () -> {
      io.volpool.memory.MemoryBudget b = io.volpool.memory.MemoryBudget.jvmOrNull();
      return b == null ? 0 : b.limit();
    });
    // the GPU's: kernel and busy time from CUDA events, device memory of the batches and as the driver sees it, pinned memory
    for (String name : io.volpool.backend.Backend.METRICS) {
      g.put(name, () -> io.volpool.exec.ExecutorRuntime.backendMetrics().getOrDefault(name, 0L));
    }
    return g;
  }
}
