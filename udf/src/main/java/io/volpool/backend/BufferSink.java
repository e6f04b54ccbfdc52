package io.volpool.backend;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Writes little-endian float32 bytes into a {@link ByteBuffer} from index 0, in order. It offers
 * {@link #window}s of the buffer itself, so a reader of a local file (a direct buffer) lands the
 * stored bytes in it with one copy by the kernel, and a widening reader writes each value once.
 */
public final class BufferSink implements VolumeSink {
  private final ByteBuffer out;
  private int pos;

  /** Writes into {@code out}'s bytes {@code [0, out.limit())}; its position and order are left alone. */
  public BufferSink(ByteBuffer out) {
    this.out = out;
  }

  @Override
  public void put(ByteBuffer src) {
    int n = src.remaining();
    if (n % Float.BYTES != 0) {
      throw new IllegalArgumentException("a volume sink takes whole floats, got " + n + " bytes");
    }
    room(n);
    out.put(pos, src, src.position(), n);
    src.position(src.limit());
    pos += n;
  }

  @Override
  public void putFloat(float v) {
    room(Float.BYTES);
    out.putInt(pos, toLittle(v));
    pos += Float.BYTES;
  }

  /** The bits of {@code v} that {@code out}'s order writes as little-endian bytes. */
  private int toLittle(float v) {
    int bits = Float.floatToRawIntBits(v);
    return out.order() == ByteOrder.LITTLE_ENDIAN ? bits : Integer.reverseBytes(bits);
  }

  @Override
  public ByteBuffer window(int max) {
    int n = Math.min(max, out.limit() - pos);
    if (n <= 0) {
      throw new IllegalStateException("a volume sink of " + out.limit() + " bytes is full");
    }
    return out.slice(pos, n);
  }

  @Override
  public void advance(int n) {
    room(n);
    pos += n;
  }

  private void room(int n) {
    if (n > out.limit() - pos) {
      throw new IllegalStateException("a volume sink of " + out.limit() + " bytes has room for " + (out.limit() - pos)
          + " more, not " + n);
    }
  }

  @Override
  public long position() {
    return pos;
  }
}
