package io.volpool.format;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Reads and writes NumPy's .npy format (versions 1.0, 2.0 and 3.0) for float tensors. Reading
 * accepts {@code <f4} as is and widens every other {@link Dtype} (either byte order) to float32;
 * Fortran-ordered arrays come back in C order. Writing always produces {@code <f4} in C order with
 * a version 1.0 header padded to 64 bytes (2.0 when the header does not fit 1.0). Stateless.
 */
public final class Npy {
  private static final byte[] MAGIC = NpyHeader.MAGIC;
  private static final int ALIGN = 64;

  private Npy() {}

  /**
   * Parses an .npy file held in memory.
   *
   * @param bytes the whole file
   * @param name the file's name or path, used in error messages
   * @throws TensorFormatException naming {@code name} and the rule the bytes broke
   */
  public static NpyArray read(byte[] bytes, String name) {
    return read(bytes, name, NpyHeader.DEFAULT_MAX_HEADER_BYTES);
  }

  /** As {@link #read(byte[], String)}, allowing headers up to {@code maxHeaderBytes}. */
  public static NpyArray read(byte[] bytes, String name, int maxHeaderBytes) {
    NpyHeader h = NpyHeader.parse(bytes, bytes.length, name, maxHeaderBytes);
    long numel = h.numel();
    long want = numel * h.itemSize();
    if (want > Integer.MAX_VALUE - 8) {
      throw NpyHeader.err(name, "array of " + want + " bytes is too large to hold in memory at once");
    }
    ByteBuffer data = ByteBuffer.wrap(bytes, (int) h.dataOffset(), (int) want).slice();
    return new NpyArray(h.shape(), toCOrderF32(data, h, name));
  }

  /** The data of {@code h} as little-endian float32 in C order (a view when already so). */
  public static ByteBuffer toCOrderF32(ByteBuffer data, NpyHeader h, String name) {
    ByteBuffer f32 = toLittleF32(data, h, h.numel(), name);
    if (h.fortranOrder() && !h.isPlainF32()) {
      f32 = fortranToC(f32, h.shape(), name);
    }
    return f32;
  }

  /** Writes {@code array} as a version 1.0 (or 2.0 for very long headers) {@code <f4} C-order .npy file. */
  public static void write(NpyArray array, OutputStream out) throws IOException {
    out.write(header(array.shape()));
    ByteBuffer d = array.data();
    if (d.hasArray()) {
      out.write(d.array(), d.arrayOffset() + d.position(), d.remaining());
    } else {
      byte[] chunk = new byte[1 << 20];
      while (d.hasRemaining()) {
        int n = Math.min(chunk.length, d.remaining());
        d.get(chunk, 0, n);
        out.write(chunk, 0, n);
      }
    }
  }

  /** The header bytes (magic, version, length, dict, padding) for a {@code <f4} C-order array of this shape. */
  public static byte[] header(long[] shape) {
    return header(shape, Dtype.FLOAT32);
  }

  /**
   * The header bytes for a little-endian C-order array of this shape and dtype ({@code <f2} for
   * float16); bfloat16 has no numpy dtype and is refused.
   */
  public static byte[] header(long[] shape, Dtype dtype) {
    String descr = dtype.descr(false);
    if (descr == null) {
      throw new IllegalArgumentException(dtype.numpyName() + " has no numpy dtype: a .npy file cannot hold it");
    }
    String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeString(shape) + ", }";
    int prefix = 10;
    int total = prefix + dict.length() + 1;
    int padded = (total + ALIGN - 1) / ALIGN * ALIGN;
    int major = 1;
    if (padded - prefix > 0xffff) {
      major = 2;
      prefix = 12;
      total = prefix + dict.length() + 1;
      padded = (total + ALIGN - 1) / ALIGN * ALIGN;
    }
    StringBuilder sb = new StringBuilder(dict);
    while (prefix + sb.length() + 1 < padded) {
      sb.append(' ');
    }
    sb.append('\n');
    byte[] text = sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    ByteBuffer b = ByteBuffer.allocate(prefix + text.length).order(ByteOrder.LITTLE_ENDIAN);
    b.put(MAGIC).put((byte) major).put((byte) 0);
    if (major == 1) {
      b.putShort((short) text.length);
    } else {
      b.putInt(text.length);
    }
    b.put(text);
    return b.array();
  }

  private static ByteBuffer toLittleF32(ByteBuffer data, NpyHeader h, long numel, String name) {
    if (h.type().isFloat32()) {
      return data;
    }
    if (numel > Integer.MAX_VALUE / 4) {
      throw NpyHeader.err(name, "array of " + numel + " elements too large to convert from " + h.descr());
    }
    ByteBuffer out = ByteBuffer.allocate((int) numel * 4).order(ByteOrder.LITTLE_ENDIAN);
    h.type().widen(data.duplicate(), (int) numel, out, Rescale.IDENTITY);
    out.flip();
    return out;
  }

  private static ByteBuffer fortranToC(ByteBuffer f32, long[] shape, String name) {
    int rank = shape.length;
    long numel = f32.remaining() / 4;
    if (numel > Integer.MAX_VALUE / 4) {
      throw NpyHeader.err(name, "Fortran-ordered array of " + numel + " elements too large to reorder in memory");
    }
    java.nio.FloatBuffer src = f32.order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    ByteBuffer out = ByteBuffer.allocate((int) numel * 4).order(ByteOrder.LITTLE_ENDIAN);
    java.nio.FloatBuffer dst = out.asFloatBuffer();
    // Fortran strides: first axis fastest.
    long[] fstride = new long[rank];
    long st = 1;
    for (int a = 0; a < rank; a++) {
      fstride[a] = st;
      st *= shape[a];
    }
    int[] idx = new int[rank];
    for (int i = 0; i < numel; i++) {
      long fi = 0;
      for (int a = 0; a < rank; a++) {
        fi += idx[a] * fstride[a];
      }
      dst.put(i, src.get((int) fi));
      for (int a = rank - 1; a >= 0; a--) {
        if (++idx[a] < shape[a]) {
          break;
        }
        idx[a] = 0;
      }
    }
    return out;
  }

  static String shapeString(long[] shape) {
    StringBuilder sb = new StringBuilder("(");
    for (int i = 0; i < shape.length; i++) {
      if (i > 0) {
        sb.append(", ");
      }
      sb.append(shape[i]);
    }
    if (shape.length == 1) {
      sb.append(',');
    }
    return sb.append(')').toString();
  }

}
