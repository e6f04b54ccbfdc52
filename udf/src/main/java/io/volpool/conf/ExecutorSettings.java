package io.volpool.conf;

import java.io.Serializable;
import java.util.Map;

/**
 * The settings an executor works with, parsed once from the {@code spark.volpool.*} values: by the
 * driver's job settings (shipped inside the run's spec) and by the executor plugin from the
 * executor's Spark configuration, through the same declarations, so the two cannot read a key
 * differently. Immutable and serializable.
 *
 * @param device where the kernels run
 * @param batchSize volumes per batch; 0 lets the backend choose from the shape (and free device memory)
 * @param cpuThreads threads of the CPU backend per executor JVM; 0: the executor's cores, resolved on the executor
 * @param gpuMemoryFraction share of each GPU's free memory that batches may take
 * @param memoryBudget bytes of the executor's memory budget; 0 ({@code auto}) means half of the executor's heap
 * @param gpuPinnedPoolBytes pinned host memory allocated when the executor starts; 0: none
 * @param npyMaxHeaderBytes the largest .npy header accepted
 */
public record ExecutorSettings(Device device, int batchSize, int cpuThreads, double gpuMemoryFraction, long memoryBudget,
    long gpuPinnedPoolBytes, int npyMaxHeaderBytes) implements Serializable {

  /** Parses and checks each value through its declaration in {@link VolpoolOptions}. */
  public static ExecutorSettings parse(Map<String, String> values) {
    return new ExecutorSettings(VolpoolOptions.DEVICE.get(values), VolpoolOptions.BATCH_SIZE.get(values),
        VolpoolOptions.CPU_THREADS.get(values), VolpoolOptions.GPU_MEMORY_FRACTION.get(values),
        VolpoolOptions.MEMORY_BUDGET.get(values), VolpoolOptions.GPU_PINNED_POOL.get(values),
        Math.toIntExact(VolpoolOptions.NPY_MAX_HEADER.get(values)));
  }

  /** These settings with the CPU threads resolved (local mode: the master's cores). */
  public ExecutorSettings withCpuThreads(int threads) {
    return new ExecutorSettings(device, batchSize, threads, gpuMemoryFraction, memoryBudget, gpuPinnedPoolBytes,
        npyMaxHeaderBytes);
  }
}
