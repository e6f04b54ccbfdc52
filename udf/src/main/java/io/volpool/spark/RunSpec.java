package io.volpool.spark;

import io.volpool.io.TensorLayout;
import io.volpool.op.Pipeline;
import java.io.Serializable;

/**
 * What executors need to process a partition, resolved once on the driver: the pipeline (weights
 * included), the executor settings (the same parsed value the executor plugin reads), and the plan's
 * choices of input layout and output. Small and serializable.
 *
 * @param settings device, batching, threads, memory budget, as parsed from the job's settings
 * @param inputFormat how the input files store volumes; null for a DataFrame's rows
 * @param layout the Parquet input layout (null for .npy input)
 * @param outputGap bytes the backend leaves before each output volume (4 for Parquet output, 0 for .npy)
 * @param outputRowBytes the most data bytes per output row of a volume stored across rows
 * @param outputRows the output holds volumes across rows (Parquet with d0/d1 columns)
 */
public record RunSpec(Pipeline pipeline, io.volpool.conf.ExecutorSettings settings, io.volpool.conf.FileFormat inputFormat,
    TensorLayout layout, int outputGap, long outputRowBytes, boolean outputRows) implements Serializable {

  public io.volpool.conf.Device device() {
    return settings.device();
  }

  public int batchSize() {
    return settings.batchSize();
  }

  public int cpuThreads() {
    return settings.cpuThreads();
  }

  public double gpuMemoryFraction() {
    return settings.gpuMemoryFraction();
  }

  public long memoryBudget() {
    return settings.memoryBudget();
  }

  public int npyMaxHeaderBytes() {
    return settings.npyMaxHeaderBytes();
  }

  /** What the engine needs of this run. */
  public io.volpool.exec.EngineSpec engine() {
    return new io.volpool.exec.EngineSpec(pipeline, batchSize(), outputGap, outputRowBytes, outputRows);
  }

  /** Threads of the CPU backend in this executor JVM: the resolved setting, else the executor's cores. */
  public int executorThreads() {
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    return executorThreads(cpuThreads(), env == null ? null : env.conf(), Runtime.getRuntime().availableProcessors());
  }

  /**
   * {@code cpuThreads} when set; else {@code spark.executor.cores} (so two executors on one host do
   * not each start a thread per core); else the cores this JVM sees (a container's limit on YARN
   * and Kubernetes; a standalone executor given a whole worker).
   */
  static int executorThreads(int cpuThreads, org.apache.spark.SparkConf conf, int jvmCores) {
    if (cpuThreads > 0) {
      return cpuThreads;
    }
    int cores = conf == null ? -1 : conf.getInt("spark.executor.cores", -1);
    return Math.max(1, cores > 0 ? cores : jvmCores);
  }

  /** The executor's budget in bytes: the setting, or half of this JVM's heap (as the driver sees it). */
  public long budgetBytes() {
    return io.volpool.memory.MemoryBudget.bytesFor(memoryBudget());
  }

  /**
   * This executor's budget in bytes, checked against its heap: a budget larger than the JVM's
   * maximum heap is refused (CPU batches and heap pages live on it, so the budget could never keep
   * it from running out of memory).
   *
   * @throws io.volpool.memory.MemoryBudgetException naming the setting, its value and the maximum
   */
  public long executorBudgetBytes() {
    long b = budgetBytes();
    io.volpool.memory.MemoryBudget.requireFitsHeap(b, Runtime.getRuntime().maxMemory());
    return b;
  }
}
