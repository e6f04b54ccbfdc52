package io.volpool.spark;

import io.volpool.io.TensorLayout;
import io.volpool.op.Pipeline;
import java.io.Serializable;

/**
 * What executors need to process a partition, resolved once on the driver from the job settings:
 * the pipeline (weights included), the device choice, batching, threads, the memory budget and how
 * the input is laid out. Small and serializable.
 *
 * @param device where the kernels run
 * @param batchSize volumes per batch; 0 lets the backend choose from the shape (and free device memory)
 * @param cpuThreads threads of the CPU backend per executor JVM; 0: the executor's cores, resolved on the executor
 * @param gpuMemoryFraction share of each GPU's free memory that batches may take
 * @param memoryBudget bytes of the executor's memory budget; 0 means half of the executor's heap
 * @param inputFormat how the input files store volumes; null for a DataFrame's rows
 * @param layout the Parquet input layout (null for .npy input)
 * @param npyMaxHeaderBytes the largest .npy header accepted
 * @param outputGap bytes the backend leaves before each output volume (4 for Parquet output, 0 for .npy)
 * @param outputRowBytes the most data bytes per output row of a volume stored across rows
 * @param outputRows the output holds volumes across rows (Parquet with d0/d1 columns)
 */
public record RunSpec(Pipeline pipeline, io.volpool.conf.Device device, int batchSize, int cpuThreads, double gpuMemoryFraction, long memoryBudget,
    io.volpool.conf.FileFormat inputFormat, TensorLayout layout, int npyMaxHeaderBytes, int outputGap, long outputRowBytes, boolean outputRows)
    implements Serializable {

  /** What the engine needs of this run. */
  public io.volpool.exec.EngineSpec engine() {
    return new io.volpool.exec.EngineSpec(pipeline, batchSize, outputGap, outputRowBytes, outputRows);
  }

  /** Threads of the CPU backend in this executor JVM: the resolved setting, else the executor's cores. */
  public int executorThreads() {
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    return executorThreads(cpuThreads, env == null ? null : env.conf(), Runtime.getRuntime().availableProcessors());
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
    return io.volpool.memory.MemoryBudget.bytesFor(memoryBudget);
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
