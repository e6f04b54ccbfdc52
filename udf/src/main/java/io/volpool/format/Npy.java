package io.volpool.format;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads and writes NumPy's .npy format (versions 1.0, 2.0 and 3.0) for float tensors. Reading
 * accepts {@code <f4} as is and converts {@code >f4}, {@code <f8} and {@code >f8} to float32;
 * Fortran-ordered arrays come back in C order. Writing always produces {@code <f4} in C order with
 * a version 1.0 header padded to 64 bytes (2.0 when the header does not fit 1.0). Stateless.
 */
public final class Npy {
  private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
  private static final int ALIGN = 64;
  private static final Pattern DESCR = Pattern.compile("'descr'\\s*:\\s*('([^']*)'|\\[)");
  private static final Pattern FORTRAN = Pattern.compile("'fortran_order'\\s*:\\s*(True|False)");
  private static final Pattern SHAPE = Pattern.compile("'shape'\\s*:\\s*\\(([^)]*)\\)");

  private Npy() {}

  /**
   * Parses an .npy file held in memory.
   *
   * @param bytes the whole file
   * @param name the file's name or path, used in error messages
   * @throws TensorFormatException naming {@code name} and the rule the bytes broke
   */
  public static NpyArray read(byte[] bytes, String name) {
    ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    if (bytes.length < 10) {
      throw err(name, "file is " + bytes.length + " bytes, shorter than the smallest .npy header (10)");
    }
    for (int i = 0; i < MAGIC.length; i++) {
      if (bytes[i] != MAGIC[i]) {
        throw err(name, "does not start with the .npy magic \\x93NUMPY");
      }
    }
    int major = bytes[6] & 0xff;
    int headerLen;
    int headerStart;
    if (major == 1) {
      headerLen = buf.getShort(8) & 0xffff;
      headerStart = 10;
    } else if (major == 2 || major == 3) {
      if (bytes.length < 12) {
        throw err(name, "version " + major + " header is cut short");
      }
      long len = buf.getInt(8) & 0xffffffffL;
      if (len > bytes.length) {
        throw err(name, "header length " + len + " is longer than the file (" + bytes.length + " bytes)");
      }
      headerLen = (int) len;
      headerStart = 12;
    } else {
      throw err(name, "unsupported .npy version " + major + "." + (bytes[7] & 0xff) + " (supported: 1.0, 2.0, 3.0)");
    }
    if (headerStart + headerLen > bytes.length) {
      throw err(name, "header length " + headerLen + " runs past the end of the file (" + bytes.length + " bytes)");
    }
    String header = new String(bytes, headerStart, headerLen,
        major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
    Header h = parseHeader(header, name);
    int dataStart = headerStart + headerLen;
    long numel = 1;
    for (long s : h.shape) {
      numel = Math.multiplyExact(numel, s);
    }
    long want = numel * h.itemSize;
    long have = bytes.length - (long) dataStart;
    if (have != want) {
      throw err(name, "data holds " + have + " bytes but shape " + shapeString(h.shape) + " of " + h.descr
          + " needs " + want + " (file truncated or corrupt)");
    }
    ByteBuffer data = ByteBuffer.wrap(bytes, dataStart, (int) want).slice();
    ByteBuffer f32 = toLittleF32(data, h, numel);
    if (h.fortranOrder && h.shape.length > 1) {
      f32 = fortranToC(f32, h.shape);
    }
    return new NpyArray(h.shape, f32);
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
    String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shapeString(shape) + ", }";
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

  private record Header(String descr, int itemSize, boolean bigEndian, boolean fortranOrder, long[] shape) {}

  private static Header parseHeader(String header, String name) {
    Matcher d = DESCR.matcher(header);
    if (!d.find()) {
      throw err(name, "header has no 'descr' entry: " + header.trim());
    }
    if (d.group(2) == null) {
      throw err(name, "dtype is a structured (record) dtype; only float32 and float64 arrays are supported");
    }
    String descr = d.group(2);
    int itemSize;
    boolean big;
    switch (descr) {
      case "<f4": case "=f4": itemSize = 4; big = false; break;
      case ">f4": itemSize = 4; big = true; break;
      case "<f8": case "=f8": itemSize = 8; big = false; break;
      case ">f8": itemSize = 8; big = true; break;
      default:
        String what = descr.endsWith("O") ? "object arrays (pickled Python objects) are not tensors"
            : "only float32 (<f4, >f4) and float64 (<f8, >f8) are supported";
        throw err(name, "dtype '" + descr + "' is not supported: " + what);
    }
    Matcher f = FORTRAN.matcher(header);
    if (!f.find()) {
      throw err(name, "header has no 'fortran_order' entry: " + header.trim());
    }
    Matcher s = SHAPE.matcher(header);
    if (!s.find()) {
      throw err(name, "header has no 'shape' tuple: " + header.trim());
    }
    List<Long> dims = new ArrayList<>();
    for (String part : s.group(1).split(",")) {
      String t = part.trim();
      if (t.isEmpty()) {
        continue;
      }
      if (t.endsWith("L")) {
        t = t.substring(0, t.length() - 1);
      }
      long v;
      try {
        v = Long.parseLong(t);
      } catch (NumberFormatException e) {
        throw err(name, "shape entry '" + t + "' is not an integer");
      }
      if (v < 0) {
        throw err(name, "shape entry " + v + " is negative");
      }
      dims.add(v);
    }
    long[] shape = dims.stream().mapToLong(Long::longValue).toArray();
    return new Header(descr, itemSize, big, f.group(1).equals("True"), shape);
  }

  private static ByteBuffer toLittleF32(ByteBuffer data, Header h, long numel) {
    if (h.itemSize == 4 && !h.bigEndian) {
      return data;
    }
    if (numel > Integer.MAX_VALUE / 4) {
      throw new TensorFormatException("array of " + numel + " elements too large to convert from " + h.descr);
    }
    ByteBuffer out = ByteBuffer.allocate((int) numel * 4).order(ByteOrder.LITTLE_ENDIAN);
    data.order(h.bigEndian ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN);
    if (h.itemSize == 4) {
      out.asFloatBuffer().put(data.asFloatBuffer());
    } else {
      java.nio.DoubleBuffer src = data.asDoubleBuffer();
      java.nio.FloatBuffer dst = out.asFloatBuffer();
      for (int i = 0; i < numel; i++) {
        dst.put(i, (float) src.get(i));
      }
    }
    return out;
  }

  private static ByteBuffer fortranToC(ByteBuffer f32, long[] shape) {
    int rank = shape.length;
    long numel = f32.remaining() / 4;
    if (numel > Integer.MAX_VALUE / 4) {
      throw new TensorFormatException("Fortran-ordered array of " + numel + " elements too large to reorder");
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

  private static TensorFormatException err(String name, String rule) {
    return new TensorFormatException(name + ": not a readable .npy file: " + rule);
  }
}
