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
   * little-endian order.
   */
  public void widen(ByteBuffer src, int n, ByteBuffer dst, Rescale r) {
    ByteBuffer s = src.slice().order(order());
    ByteBuffer d = dst.slice().order(ByteOrder.LITTLE_ENDIAN);
    boolean id = r.isIdentity();
    float a = r.slope();
    float b = r.intercept();
    switch (dtype) {
      case UINT8:
        for (int k = 0; k < n; k++) {
          float v = s.get(k) & 0xff;
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      case INT8:
        for (int k = 0; k < n; k++) {
          float v = s.get(k);
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      case UINT16:
        for (int k = 0; k < n; k++) {
          float v = s.getShort(k << 1) & 0xffff;
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      case INT16:
        for (int k = 0; k < n; k++) {
          float v = s.getShort(k << 1);
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      case INT32:
        for (int k = 0; k < n; k++) {
          float v = s.getInt(k << 2);
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      case FLOAT16:
        for (int k = 0; k < n; k++) {
          float v = HalfFloats.f16ToFloat(s.getShort(k << 1));
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      case BFLOAT16:
        for (int k = 0; k < n; k++) {
          float v = HalfFloats.bf16ToFloat(s.getShort(k << 1));
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      case FLOAT32:
        for (int k = 0; k < n; k++) {
          float v = s.getFloat(k << 2);
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      case FLOAT64:
        for (int k = 0; k < n; k++) {
          float v = (float) s.getDouble(k << 3);
          d.putFloat(k << 2, id ? v : v * a + b);
        }
        break;
      default:
        throw new IllegalStateException("no widening for " + dtype);
    }
    src.position(src.position() + n * itemSize());
    dst.position(dst.position() + n * Float.BYTES);
  }
}
