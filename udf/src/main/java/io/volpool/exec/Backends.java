package io.volpool.exec;

import io.volpool.backend.Backend;
import io.volpool.backend.DeviceUnavailableException;
import io.volpool.conf.VolpoolOptions;
import io.volpool.cpu.CpuBackend;
import io.volpool.cuda.CudaBackend;
import io.volpool.cuda.CudaUnavailableException;
import io.volpool.memory.MemoryBudget;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place that chooses the backend, once per executor JVM and setting, and keeps it for the
 * JVM's life (asked through {@link ExecutorRuntime}) (like Iceberg's executor cache): {@code gpu} must get CUDA or fail saying why,
 * {@code cpu} always gets the CPU, {@code auto} tries CUDA and falls back to the CPU, logging the
 * reason and how to get the fast path. The instances live until JVM shutdown, when a hook closes them.
 */
final class Backends {
  private static final Logger LOG = LoggerFactory.getLogger(Backends.class);
  private static final Map<String, Backend> CACHE = new HashMap<>();
  private static final Map<String, MemoryBudget> BUDGETS = new HashMap<>();
  private static boolean hookInstalled;
  /** The backends of {@link #CACHE}, for readers that must not wait on a backend being made (metrics). */
  private static volatile java.util.List<Backend> open = java.util.List.of();

  private Backends() {}

  /**
   * The JVM's backend for this device choice.
   *
   * @param device {@code auto}, {@code cpu} or {@code gpu}
   * @param cpuThreads threads for the CPU backend (at least 1)
   * @param gpuMemoryFraction share of each GPU's free memory that batches may take
   * @param budget the executor's memory budget, which the backend's buffer pools draw on
   * @throws IllegalStateException for {@code gpu} when no usable CUDA device exists, with the reason
   */
  static synchronized Backend get(io.volpool.conf.Device device, int cpuThreads, double gpuMemoryFraction, MemoryBudget budget) {
    // the GPU backend does not depend on the CPU threads: a warm-up that resolved them otherwise still finds it
    String key = device == io.volpool.conf.Device.GPU ? device + "/" + gpuMemoryFraction : device + "/" + cpuThreads + "/" + gpuMemoryFraction;
    Backend b = CACHE.get(key);
    if (b != null && BUDGETS.get(key) != budget) {
      // the budget was resized between jobs of this JVM: the backend's pools must draw on the new one
      b.close();
      b = null;
    }
    if (b == null) {
      b = create(device, cpuThreads, gpuMemoryFraction, budget);
      CACHE.put(key, b);
      BUDGETS.put(key, budget);
      open = java.util.List.copyOf(CACHE.values());
      if (!hookInstalled) {
        hookInstalled = true;
        Runtime.getRuntime().addShutdownHook(new Thread(Backends::closeAll, "volpool-backend-close"));
      }
    }
    return b;
  }

  private static Backend create(io.volpool.conf.Device device, int cpuThreads, double gpuMemoryFraction, MemoryBudget budget) {
    switch (device) {
      case CPU:
        LOG.info("volpool backend: CPU with {} threads (" + VolpoolOptions.DEVICE.key() + "=cpu)", cpuThreads);
        return CpuBackend.fast(cpuThreads, budget);
      case GPU:
        try {
          Backend g = CudaBackend.create(gpuMemoryFraction, budget);
          LOG.info("volpool backend: CUDA, {} device(s) visible (" + VolpoolOptions.DEVICE.key() + "=gpu)", g.deviceCount());
          return g;
        } catch (CudaUnavailableException e) {
          throw new DeviceUnavailableException(e.getMessage(), null);
        }
      case AUTO:
        try {
          Backend g = CudaBackend.create(gpuMemoryFraction, budget);
          LOG.info("volpool backend: CUDA, {} device(s) visible (" + VolpoolOptions.DEVICE.key() + "=auto found a GPU)", g.deviceCount());
          return g;
        } catch (CudaUnavailableException | LinkageError e) {
          LOG.warn("volpool backend: CPU, because the GPU backend is unavailable: {}. To use a GPU: run on a host"
              + " with an NVIDIA driver 580+ (CUDA 13) and linux-x86_64, and give executors a GPU"
              + " (spark.executor.resource.gpu.amount=1, spark.task.resource.gpu.amount); see docs/gpus.md.",
              e.getMessage());
          return CpuBackend.fast(cpuThreads, budget);
        }
      default:
        throw new AssertionError(device);
    }
  }

  /**
   * Fails now, on the driver, when {@code device=gpu} cannot work in this JVM: in local mode the
   * driver is the executor, and one line beats a failed task's stack trace in every task. A start
   * initialising CUDA meanwhile ({@link ExecutorRuntime#start}) is waited for, not repeated.
   *
   * @throws DeviceUnavailableException saying why
   */
  static void requireGpu() {
    try (CudaBackend b = CudaBackend.create(0.5)) {
      LOG.debug("CUDA available: {} device(s)", b.deviceCount());
    } catch (CudaUnavailableException e) {
      throw new DeviceUnavailableException(e.getMessage(), null);
    }
  }

  /**
   * Whether this JVM has looked for CUDA already (a warm-up or a task did), so that
   * {@link #requireGpu} answers without waiting for CUDA's initialisation.
   */
  static boolean gpuProbed() {
    return CudaBackend.probed();
  }

  private static CpuBackend rowCpu;

  /**
   * Runs {@code pipeline} on one volume {@code x} of {@code input} on this JVM's one-thread CPU
   * backend: the SQL functions, which Spark calls one row at a time on many task threads.
   */
  static float[] runOneOnCpu(io.volpool.op.Pipeline pipeline, io.volpool.op.VolumeShape input, float[] x) {
    CpuBackend b;
    synchronized (Backends.class) {
      if (rowCpu == null) {
        rowCpu = CpuBackend.fast(1);
      }
      b = rowCpu;
    }
    return b.run(pipeline, input, x, 1);
  }

  /** Closes every backend of this JVM (idempotent; also run at JVM shutdown). */
  static synchronized void closeAll() {
    for (Backend b : CACHE.values()) {
      try {
        b.close();
      } catch (RuntimeException e) {
        LOG.warn("closing backend {} failed: {}", b.name(0), e.toString());
      }
    }
    CACHE.clear();
    BUDGETS.clear();
    open = java.util.List.of();
  }

  /** The gauges of this JVM's backends now ({@link Backend#metrics}), summed by name; never waits for a backend being made. */
  static Map<String, Long> metrics() {
    Map<String, Long> sum = new HashMap<>();
    for (Backend b : open) {
      b.metrics().forEach((k, v) -> sum.merge(k, v, Long::sum));
    }
    return sum;
  }
}
