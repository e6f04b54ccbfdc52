package io.volpool.spark;

import io.volpool.io.parquet.TensorLayout;
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
 * @param rescale where each volume's rescale comes from (settings, or columns of the input)
 * @param quarantine bad records are set aside ({@code spark.volpool.badRecords.path}) rather than failing their task
 */
public record RunSpec(Pipeline pipeline, io.volpool.conf.ExecutorSettings settings, io.volpool.conf.FileFormat inputFormat,
    TensorLayout layout, int outputGap, long outputRowBytes, boolean outputRows, io.volpool.io.InputRescale rescale,
    boolean quarantine) implements Serializable {

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
    return new io.volpool.exec.EngineSpec(pipeline, batchSize(), outputGap, outputRowBytes, outputRows,
        quarantine);
  }
}
