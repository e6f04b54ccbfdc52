package io.volpool.exec;

import io.volpool.backend.Backend;
import io.volpool.conf.Device;
import io.volpool.conf.ExecutorSettings;
import io.volpool.memory.MemoryBudget;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an executor JVM holds for volpool, made from its {@link ExecutorSettings}: the memory budget,
 * the backend with its devices and pinned pool, and the codecs. The executor plugin starts it when the
 * executor starts ({@link #start}) and releases it when the executor stops ({@link #shutdown}); in
 * local mode the job does both. Tasks, the SQL path and the batches made ahead ask {@link #of}: the
 * one lookup, so a budget or a backend is never resolved twice or differently.
 */
public final class ExecutorRuntime {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorRuntime.class);
  private static final AtomicInteger STARTS_ENDED = new AtomicInteger();
  private static volatile String lastStart;

  private final MemoryBudget budget;
  private final Backend backend;

  private ExecutorRuntime(MemoryBudget budget, Backend backend) {
    this.budget = budget;
    this.backend = backend;
  }

  /**
   * This JVM's runtime for {@code s}: its budget (checked against the heap) and its backend, made on
   * first use and kept for the JVM's life (a later call with other settings, as tests make, resizes
   * the budget and makes the backend anew).
   *
   * @throws io.volpool.memory.MemoryBudgetException for a budget larger than this JVM's heap
   * @throws io.volpool.backend.DeviceUnavailableException for {@code device=gpu} without a usable GPU
   */
  public static ExecutorRuntime of(ExecutorSettings s) {
    MemoryBudget budget = MemoryBudget.forJvm(budgetBytes(s));
    return new ExecutorRuntime(budget, Backends.get(s.device(), threads(s.cpuThreads()), s.gpuMemoryFraction(), budget));
  }

  /**
   * The budget in bytes of an executor JVM with these settings (auto: half of this JVM's heap), refused
   * when larger than the heap: CPU batches and heap pages live there, so the budget could never keep it from
   * running out of memory.
   *
   * @throws io.volpool.memory.MemoryBudgetException naming the setting, its value and the maximum
   */
  public static long budgetBytes(ExecutorSettings s) {
    long bytes = MemoryBudget.bytesFor(s.memoryBudget());
    MemoryBudget.requireFitsHeap(bytes, Runtime.getRuntime().maxMemory());
    return bytes;
  }

  public MemoryBudget budget() {
    return budget;
  }

  public Backend backend() {
    return backend;
  }

  /**
   * Starts this JVM's runtime for {@code s} before tasks come, on a thread of its own: the backend
   * opens the devices of {@code gpuAddresses} (Spark's addresses; none: device 0) and allocates the
   * pinned pool ({@link Backend#warm}); then the native Snappy library is loaded and Hadoop's default
   * resources are parsed. A task asking meanwhile waits until the backend exists, not for the pool.
   * A start that fails is logged, and the task meets the same failure with its own message.
   *
   * @return the thread (tests join it)
   */
  public static Thread start(ExecutorSettings s, List<String> gpuAddresses) {
    Thread t = new Thread(() -> {
      long t0 = System.nanoTime();
      String what;
      try {
        Backend b = of(s).backend();
        List<Integer> devices = new ArrayList<>();
        for (String a : gpuAddresses.isEmpty() ? List.of("") : gpuAddresses) {
          devices.add(b.deviceFor(a.isEmpty() ? null : a));
        }
        what = b.warm(devices, s.gpuPinnedPoolBytes());
        LOG.info("volpool warm-up done in {} ms: {}", (System.nanoTime() - t0) / 1_000_000, what);
      } catch (RuntimeException | LinkageError e) {
        what = "failed: " + e;
        LOG.warn("volpool warm-up failed after {} ms (tasks open the backend themselves and say why if they cannot): {}",
            (System.nanoTime() - t0) / 1_000_000, e.toString());
      }
      // after the backend, which every first task waits for; a task that meets Snappy meanwhile waits for this load
      String codecs;
      try {
        codecs = io.volpool.io.CodecWarmUp.warm();
      } catch (RuntimeException | LinkageError e) {
        codecs = "Snappy not loaded (" + e + ")";
        LOG.warn("volpool warm-up: {}", codecs);
      }
      // each failure named for itself: Hadoop's defaults do not depend on Snappy
      try {
        codecs += "; " + io.volpool.io.ShippedConf.warm();
        LOG.info("volpool warm-up: {}", codecs);
      } catch (RuntimeException e) {
        codecs += "; Hadoop's defaults not parsed (" + e + ")";
        LOG.warn("volpool warm-up: {}", codecs);
      }
      lastStart = what + "; " + codecs;
      STARTS_ENDED.incrementAndGet();
    }, "volpool-warm-up");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** The gauges of this JVM's backends now ({@link Backend#metrics}, by {@link Backend#METRICS}' names); empty before one exists. */
  public static java.util.Map<String, Long> backendMetrics() {
    return Backends.metrics();
  }

  /** The executor is stopping: its backends give back their GPU contexts, device and pinned memory, in order. */
  public static void shutdown() {
    Backends.closeAll();
  }

  /** How many starts of this JVM have ended, done or failed. */
  public static int startsEnded() {
    return STARTS_ENDED.get();
  }

  /** What the last start of this JVM did ("failed: ..." when its backend failed), or null when none ran. */
  public static String lastStart() {
    return lastStart;
  }

  /**
   * Whether {@code device=gpu} can work in this JVM; fails saying why (in local mode the driver is the
   * executor, and one line beats a failed task's stack trace in every task).
   *
   * @throws io.volpool.backend.DeviceUnavailableException saying why
   */
  public static void requireGpu() {
    Backends.requireGpu();
  }

  /** Whether this JVM has looked for CUDA already, so {@link #requireGpu} answers without waiting for its initialisation. */
  public static boolean gpuProbed() {
    return Backends.gpuProbed();
  }

  /**
   * Runs {@code pipeline} on one volume {@code x} of {@code input} on this JVM's one-thread CPU
   * backend: the SQL functions, which Spark calls one row at a time on many task threads.
   */
  public static float[] runOneOnCpu(io.volpool.op.Pipeline pipeline, io.volpool.op.VolumeShape input, float[] x) {
    return Backends.runOneOnCpu(pipeline, input, x);
  }

  /** Whether {@code s} has anything to start before tasks come (the CPU backend costs nothing to make). */
  public static boolean hasWarmUp(ExecutorSettings s) {
    return s.device() != Device.CPU;
  }

  /** Threads of the CPU backend in this JVM: the setting, else {@code spark.executor.cores}, else the JVM's cores. */
  static int threads(int cpuThreads) {
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    int cores = env == null ? -1 : env.conf().getInt("spark.executor.cores", -1);
    return threads(cpuThreads, cores, Runtime.getRuntime().availableProcessors());
  }

  /**
   * {@code cpuThreads} when set; else {@code executorCores} (so two executors on one host do not each
   * start a thread per core); else the cores this JVM sees (a container's limit on YARN and
   * Kubernetes; a standalone executor given a whole worker).
   */
  public static int threads(int cpuThreads, int executorCores, int jvmCores) {
    if (cpuThreads > 0) {
      return cpuThreads;
    }
    return Math.max(1, executorCores > 0 ? executorCores : jvmCores);
  }
}
