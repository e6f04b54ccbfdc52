package io.volpool.backend;

import java.nio.ByteBuffer;

/**
 * Where readers put volumes: the input of a {@link Batch}, written in order, little-endian float32.
 * A sink of plain host bytes (pinned memory on the GPU backend) also offers a {@link #window} that
 * a reader fills in place, so storage bytes land in the batch buffer with no copy in between.
 */
public interface VolumeSink {
  /** Appends {@code src}'s remaining bytes (a multiple of 4) and advances {@code src}. */
  void put(ByteBuffer src);

  /** Appends one float. */
  void putFloat(float v);

  /**
   * The next {@code n} bytes of the sink as a writable buffer (position 0, limit {@code n}) for a
   * reader to fill, followed by {@link #advance(int)}; null when the sink holds no plain bytes.
   */
  ByteBuffer window(int n);

  /** Marks {@code n} bytes of the last window as written. */
  void advance(int n);

  /** Bytes written so far. */
  long position();
}
