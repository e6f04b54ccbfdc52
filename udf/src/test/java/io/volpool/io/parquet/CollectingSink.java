package io.volpool.io.parquet;

import io.volpool.backend.VolumeSink;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** A sink over a plain buffer, heap or direct; with {@code windows} it offers in-place windows like pinned memory. */
public final class CollectingSink implements VolumeSink {
  final ByteBuffer buf;
  private final boolean windows;

  CollectingSink(int capacity, boolean direct, boolean windows) {
    this.buf = (direct ? ByteBuffer.allocateDirect(capacity) : ByteBuffer.allocate(capacity)).order(ByteOrder.LITTLE_ENDIAN);
    this.windows = windows;
  }

  @Override
  public void put(ByteBuffer src) {
    buf.put(src);
  }

  @Override
  public void putFloat(float v) {
    buf.putFloat(v);
  }

  @Override
  public ByteBuffer window(int n) {
    // small windows, so readers must loop as they do over pinned staging chunks
    return windows ? buf.slice(buf.position(), Math.min(n, 1000)) : null;
  }

  @Override
  public void advance(int n) {
    buf.position(buf.position() + n);
  }

  @Override
  public long position() {
    return buf.position();
  }

  public byte[] bytes() {
    byte[] b = new byte[buf.position()];
    buf.duplicate().flip().get(b);
    return b;
  }
}
