package io.volpool.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * How a volume's values are stored: a {@link Dtype} and its byte order, as a Parquet {@code dtype}
 * column or an .npy header names it. Widens stored values to float32 (then rescales them) in bulk;
 * immutable value.
 *
 * @param dtype the element type
 * @param bigEndian whether multi-byte elements are stored most significant byte first
 */
public record ValueType(Dtype dtype, boolean bigEndian) {
  /** Little-endian float32, the layout kernels take as is. */
  public static final ValueType FLOAT32 = new ValueType(Dtype.FLOAT32, false);

  /**
   * The value type a dtype string names: a numpy name ({@code int16}, {@code bfloat16}, little-endian)
   * or an array-protocol string ({@code <u2}, {@code >i2}, {@code |u1}, {@code =f4}, {@code f8}: byte
   * order {@code <}, {@code >}, {@code =} or {@code |}, the last two and none meaning little-endian);
   * null when it names none of {@link Dtype#ACCEPTED}.
   */
  public static ValueType parse(String s) {
    if (s == null || s.isEmpty()) {
      return null;
    }
    Dtype named = Dtype.named(s);
    if (named != null && named.numpyName().equals(s)) {
      return new ValueType(named, false);
    }
    int i = 0;
    boolean big = false;
    char c0 = s.charAt(0);
    if (c0 == '<' || c0 == '>' || c0 == '=' || c0 == '|') {
      big = c0 == '>';
      i = 1;
    }
    if (s.length() != i + 2 || !Character.isDigit(s.charAt(i + 1))) {
      return null;
    }
    Dtype d = Dtype.of(s.charAt(i), s.charAt(i + 1) - '0');
    if (d == null || (c0 == '|' && d.itemSize() != 1)) {
      return null;
    }
    return new ValueType(d, big && d.itemSize() > 1);
  }

  /** Bytes per stored element. */
  public int itemSize() {
    return dtype.itemSize();
  }

  /** Whether values are stored as the kernels take them (little-endian float32), so no pass widens them. */
  public boolean isFloat32() {
    return dtype == Dtype.FLOAT32 && !bigEndian;
  }

  /** The byte order of the stored elements. */
  public ByteOrder order() {
    return bigEndian ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
  }

  /** The dtype string a writer records: the numpy name, with the byte order when it is big-endian. */
  @Override
  public String toString() {
    return bigEndian ? dtype.descr(true) : dtype.numpyName();
  }

  /**
   * Widens {@code n} stored values from {@code src} (from its position, which advances) to float32,
   * applies {@code r}, and puts them into {@code dst} from its position on (which advances), in
   * little-endian order. Works through primitive arrays a block at a time (bulk buffer transfers and
   * loops the JIT vectorizes; float16 through a table of all 65,536 values), so widening costs about
   * what copying does.
   */
  public void widen(ByteBuffer src, int n, ByteBuffer dst, Rescale r) {
    ByteBuffer s = src.slice().order(order());
    ByteBuffer d = dst.slice().order(ByteOrder.LITTLE_ENDIAN);
    Scratch t = SCRATCH.get();
    float[] f = t.floats;
    boolean id = r.isIdentity();
    float a = r.slope();
    float b = r.intercept();
    for (int done = 0; done < n; ) {
      int m = Math.min(BLOCK, n - done);
      load(s, done, m, t);
      if (!id) {
        for (int k = 0; k < m; k++) {
          f[k] = f[k] * a + b;
        }
      }
      d.position(done << 2);
      d.asFloatBuffer().put(f, 0, m);
      done += m;
    }
    src.position(src.position() + n * itemSize());
    dst.position(dst.position() + n * Float.BYTES);
  }

  /** Elements widened per block. */
  private static final int BLOCK = 4096;

  /** Per-thread arrays for one block: the stored elements and their float32 values. */
  private static final class Scratch {
    final byte[] bytes = new byte[BLOCK];
    final short[] shorts = new short[BLOCK];
    final int[] ints = new int[BLOCK];
    final double[] doubles = new double[BLOCK];
    final float[] floats = new float[BLOCK];
  }

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  /** float16 bits to float32 (PyTorch's conversion, NaN payloads kept), one entry per bit pattern. */
  private static final float[] F16 = new float[1 << 16];

  static {
    for (int i = 0; i < F16.length; i++) {
      F16[i] = HalfFloats.f16ToFloat((short) i);
    }
  }

  /** Puts elements {@code [at, at + m)} of {@code s} into {@code t.floats[0, m)} as float32. */
  private void load(ByteBuffer s, int at, int m, Scratch t) {
    float[] f = t.floats;
    switch (dtype) {
      case UINT8 -> {
        s.get(at, t.bytes, 0, m);
        for (int k = 0; k < m; k++) {
          f[k] = t.bytes[k] & 0xff;
        }
      }
      case INT8 -> {
        s.get(at, t.bytes, 0, m);
        for (int k = 0; k < m; k++) {
          f[k] = t.bytes[k];
        }
      }
      case UINT16 -> {
        shorts(s, at, m, t);
        for (int k = 0; k < m; k++) {
          f[k] = t.shorts[k] & 0xffff;
        }
      }
      case INT16 -> {
        shorts(s, at, m, t);
        for (int k = 0; k < m; k++) {
          f[k] = t.shorts[k];
        }
      }
      case FLOAT16 -> {
        shorts(s, at, m, t);
        for (int k = 0; k < m; k++) {
          f[k] = F16[t.shorts[k] & 0xffff];
        }
      }
      case BFLOAT16 -> {
        shorts(s, at, m, t);
        for (int k = 0; k < m; k++) {
          f[k] = Float.intBitsToFloat((t.shorts[k] & 0xffff) << 16);
        }
      }
      case INT32 -> {
        s.position(at << 2);
        s.asIntBuffer().get(t.ints, 0, m);
        for (int k = 0; k < m; k++) {
          f[k] = t.ints[k];
        }
      }
      case FLOAT32 -> {
        s.position(at << 2);
        s.asFloatBuffer().get(f, 0, m);
      }
      case FLOAT64 -> {
        s.position(at << 3);
        s.asDoubleBuffer().get(t.doubles, 0, m);
        for (int k = 0; k < m; k++) {
          f[k] = (float) t.doubles[k];
        }
      }
      default -> throw new IllegalStateException("no widening for " + dtype);
    }
  }

  private static void shorts(ByteBuffer s, int at, int m, Scratch t) {
    s.position(at << 1);
    s.asShortBuffer().get(t.shorts, 0, m);
  }
}
