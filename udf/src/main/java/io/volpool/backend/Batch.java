package io.volpool.backend;

import java.nio.ByteBuffer;

/**
 * One batch of same-shape volumes on its way through a backend: the caller writes volumes into
 * {@link #input()}, the executor runs them ({@link BatchExecutor#submit}), the caller reads
 * {@link #output()}. Its host buffers come from the backend's budgeted pool; {@link #close()} gives
 * them back (after waiting for any work still running). Driven by one task thread.
 */
public interface Batch extends AutoCloseable {
  /** The input, positioned after what was written so far. */
  VolumeSink input();

  /**
   * Waits for the work and returns the output of the {@code n} submitted volumes: volume {@code i}
   * starts at {@link #outputOffset(int)}, preceded by the executor's output gap, whose bytes the
   * caller may overwrite (e.g. with a length prefix). The buffer is valid until {@link #close()}.
   */
  ByteBuffer output();

  /** Where output volume {@code i} starts in {@link #output()}. */
  long outputOffset(int i);

  /**
   * Time this batch spent in {@link Phase#WAIT_GPU}, {@link Phase#H2D}, {@link Phase#KERNELS}, {@link
   * Phase#D2H}; complete after {@link #output()}.
   */
  PhaseTimes times();

  @Override
  void close();
}
