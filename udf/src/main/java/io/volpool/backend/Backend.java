package io.volpool.backend;

import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;

/**
 * Runs pipelines over batches of volumes on one kind of hardware. One instance per executor JVM
 * (see {@link Backends}); it owns its native state and releases it on {@link #close()}, which is
 * safe to call twice. Implementations are thread-safe: Spark runs several tasks at once.
 */
public interface Backend extends AutoCloseable {
  /** A short human-readable name for logs and the run summary, e.g. {@code cpu} or {@code cuda:0 NVIDIA H200}. */
  String name();

  /**
   * Opens an executor for {@code pipeline} on volumes of shape {@code input}, with buffers for up to
   * {@code maxBatch} volumes. The caller owns the executor and must close it.
   *
   * @throws IllegalArgumentException when the pipeline cannot take this shape, or a volume cannot fit
   */
  BatchExecutor open(Pipeline pipeline, VolumeShape input, int maxBatch);

  /** The batch size this backend suggests when the user sets none, for volumes of this shape. */
  int suggestBatch(Pipeline pipeline, VolumeShape input);

  @Override
  void close();
}
