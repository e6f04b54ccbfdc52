package io.volpool.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A float32 array read from or written to an .npy file: its shape and its data as little-endian
 * float32 in C order. Immutable value; the buffer may share the bytes it was parsed from.
 */
public final class NpyArray {
  private final long[] shape;
  private final ByteBuffer data;

  public NpyArray(long[] shape, ByteBuffer data) {
    this.shape = shape.clone();
    this.data = data.slice().order(ByteOrder.LITTLE_ENDIAN);
    long want = numel() * Float.BYTES;
    if (this.data.remaining() != want) {
      throw new TensorFormatException(
          "data holds " + this.data.remaining() + " bytes but shape " + Arrays.toString(shape)
              + " of float32 needs " + want);
    }
  }

  public static NpyArray of(long[] shape, float[] values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(values);
    return new NpyArray(shape, b);
  }

  public long[] shape() {
    return shape.clone();
  }

  public int rank() {
    return shape.length;
  }

  public long numel() {
    long n = 1;
    for (long s : shape) {
      n = Math.multiplyExact(n, s);
    }
    return n;
  }

  /** A read-only little-endian view of the float32 data, positioned at 0. */
  public ByteBuffer data() {
    return data.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Copies the data into a new float array (only for arrays under 2^31 elements). */
  public float[] toFloatArray() {
    float[] out = new float[Math.toIntExact(numel())];
    data().asFloatBuffer().get(out);
    return out;
  }
}
