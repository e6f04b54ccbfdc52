package io.volpool.backend;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Writes little-endian float32 bytes into a float array. */
public final class FloatSink implements VolumeSink {
  private final float[] a;
  private int pos;

  public FloatSink(float[] a) {
    this.a = a;
  }

  @Override
  public void put(ByteBuffer src) {
    int nf = src.remaining() / Float.BYTES;
    if (nf * Float.BYTES != src.remaining()) {
      throw new IllegalArgumentException("a volume sink takes whole floats, got " + src.remaining() + " bytes");
    }
    src.slice().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(a, pos, nf);
    src.position(src.limit());
    pos += nf;
  }

  @Override
  public void putFloat(float v) {
    a[pos++] = v;
  }

  @Override
  public ByteBuffer window(int n) {
    return null;
  }

  @Override
  public void advance(int n) {
    throw new UnsupportedOperationException("a float sink has no byte window");
  }

  @Override
  public long position() {
    return (long) pos * Float.BYTES;
  }
}
