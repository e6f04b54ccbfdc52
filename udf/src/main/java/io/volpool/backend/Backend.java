package io.volpool.backend;

import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;

/**
 * Runs pipelines over batches of volumes on one kind of hardware. One instance per executor JVM
 * (see {@link Backends}); it owns its native state and buffer pools and releases them on
 * {@link #close()}, which is safe to call twice. Thread-safe: Spark runs several tasks at once.
 * Devices are named by the caller (the Spark layer maps a task's resources to a device index);
 * the CPU backend ignores the index.
 */
public interface Backend extends AutoCloseable {
  /** A short human-readable name for logs and the run summary, e.g. {@code cpu (16 threads)} or {@code cuda:0 NVIDIA H200}. */
  String name(int device);

  /** How many devices this backend can run on (1 for the CPU). */
  int deviceCount();

  /**
   * Opens an executor for {@code pipeline} on volumes of shape {@code input} on {@code device}, with
   * batches of up to {@code maxBatch} volumes. Each output volume is preceded by {@code outputGap}
   * bytes the caller may use (a Parquet value's length prefix). The caller owns the executor.
   *
   * @throws IllegalArgumentException when the pipeline cannot take this shape, or a volume cannot fit
   */
  BatchExecutor open(Pipeline pipeline, VolumeShape input, int maxBatch, int device, int outputGap);

  /** The batch size this backend suggests when the user sets none, for volumes of this shape. */
  int suggestBatch(Pipeline pipeline, VolumeShape input, int device);

  @Override
  void close();
}
