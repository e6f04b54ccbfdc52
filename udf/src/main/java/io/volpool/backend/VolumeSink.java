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
   * The next bytes of the sink as a writable buffer of between 1 and {@code max} bytes (a multiple
   * of 4 when {@code max} is), for a reader to fill completely and then {@link #advance(int)} by its
   * size; readers loop until their value is in. Null when the sink holds no plain bytes (then use
   * {@link #put}).
   */
  ByteBuffer window(int max);

  /** Marks {@code n} bytes of the last window as written. */
  void advance(int n);

  /** Fills the sink with {@code n} bytes read by {@code reader} into windows (or via {@code put} through {@code chunk}). */
  default void fill(long n, WindowReader reader, byte[] chunk) throws java.io.IOException {
    long left = n;
    while (left > 0) {
      int want = (int) Math.min(left, Integer.MAX_VALUE - 8);
      ByteBuffer w = window(want);
      if (w != null) {
        int k = w.remaining();
        reader.read(w);
        advance(k);
        left -= k;
      } else {
        int k = (int) Math.min(chunk.length, left);
        ByteBuffer c = ByteBuffer.wrap(chunk, 0, k);
        reader.read(c);
        c.flip();
        put(c);
        left -= k;
      }
    }
  }

  /** Reads exactly {@code dst.remaining()} bytes into {@code dst}. */
  @FunctionalInterface
  interface WindowReader {
    void read(ByteBuffer dst) throws java.io.IOException;
  }

  /** Bytes written so far. */
  long position();
}
