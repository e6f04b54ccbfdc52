package io.volpool.backend;

import io.volpool.format.Rescale;
import java.nio.ByteBuffer;

/**
 * One batch of same-shape volumes on its way through a backend: the caller writes volumes into
 * {@link #input()}, the executor runs them ({@link BatchExecutor#submit}), the caller reads
 * {@link #output()}. Its host buffers come from the backend's budgeted pool; {@link #close()} gives
 * them back (after waiting for any work still running). Driven by one task thread.
 */
public interface Batch extends AutoCloseable {
  /**
   * The input, positioned after what was written so far: little-endian float32, or the values as
   * stored when the executor widens them itself ({@link BatchExecutor#stored()}).
   */
  VolumeSink input();

  /**
   * Sets how volume {@code i} (the next one to be written) is rescaled as the executor widens it: for
   * executors that take stored values ({@link BatchExecutor#stored()} other than float32), called
   * before each volume's bytes. Others take values widened and rescaled already and refuse it.
   */
  default void rescale(int i, Rescale r) {
    throw new UnsupportedOperationException("this batch takes float32 values, widened and rescaled by the reader");
  }

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
