package io.volpool.format;

import io.volpool.conf.VolpoolOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The header of an .npy file, parsed as numpy parses it: the dictionary is read as the Python
 * literal it is (a small parser for dicts, strings, ints, booleans and tuples, duplicate keys
 * resolved last-wins as in Python), must hold exactly {@code descr}, {@code fortran_order} and
 * {@code shape}, and may be at most {@link #DEFAULT_MAX_HEADER_BYTES} long unless the caller allows
 * more (numpy's {@code max_header_size}). Anything numpy rejects is a {@link TensorFormatException}
 * naming the file and the rule. Immutable value.
 *
 * @param descr the dtype string, e.g. {@code <f4}
 * @param type the element type and byte order {@code descr} names
 * @param fortranOrder whether the data is in Fortran (column-major) order
 * @param shape the array's shape
 * @param dataOffset where the data starts in the file
 */
public record NpyHeader(String descr, ValueType type, boolean fortranOrder, long[] shape, long dataOffset) {
  /** numpy's default {@code max_header_size}. */
  public static final int DEFAULT_MAX_HEADER_BYTES = 10_000;
  static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};

  /** Bytes to read from the file's start to see the whole header of a file of {@code fileLength} bytes. */
  public static int prefixBytes(long fileLength, int maxHeaderBytes) {
    return (int) Math.min(fileLength, 12L + maxHeaderBytes);
  }

  /**
   * Parses the header at the start of {@code prefix} (at least {@link #prefixBytes} of the file).
   *
   * @param fileLength the whole file's length, to check the data's size
   */
  public static NpyHeader parse(byte[] prefix, long fileLength, String name, int maxHeaderBytes) {
    return parse(prefix, fileLength, name, maxHeaderBytes, true);
  }

  /**
   * The header alone, whatever the file's length past it: a file still being written (a .npy written in
   * place by ranges, whose last planes may not be there yet).
   */
  public static NpyHeader parseHeader(byte[] prefix, long fileLength, String name, int maxHeaderBytes) {
    return parse(prefix, fileLength, name, maxHeaderBytes, false);
  }

  private static NpyHeader parse(byte[] prefix, long fileLength, String name, int maxHeaderBytes, boolean whole) {
    if (fileLength < 10 || prefix.length < 10) {
      throw err(name, "file is " + fileLength + " bytes, shorter than the smallest .npy header (10)");
    }
    for (int i = 0; i < MAGIC.length; i++) {
      if (prefix[i] != MAGIC[i]) {
        throw err(name, "does not start with the .npy magic \\x93NUMPY");
      }
    }
    ByteBuffer buf = ByteBuffer.wrap(prefix).order(ByteOrder.LITTLE_ENDIAN);
    int major = prefix[6] & 0xff;
    int minor = prefix[7] & 0xff;
    long headerLen;
    int headerStart;
    if (major == 1 && minor == 0) {
      headerLen = buf.getShort(8) & 0xffff;
      headerStart = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
      if (prefix.length < 12) {
        throw err(name, "version " + major + ".0 header is cut short");
      }
      headerLen = buf.getInt(8) & 0xffffffffL;
      headerStart = 12;
    } else {
      throw err(name, "unsupported .npy version " + major + "." + minor + " (supported: 1.0, 2.0, 3.0)");
    }
    if (headerLen > maxHeaderBytes) {
      throw err(name, "header is " + headerLen + " bytes, more than the " + maxHeaderBytes
          + " numpy reads by default (max_header_size); raise " + VolpoolOptions.NPY_MAX_HEADER.key() + " if the file is trusted");
    }
    if (headerStart + headerLen > fileLength || headerStart + headerLen > prefix.length) {
      throw err(name, "header length " + headerLen + " runs past the end of the file (" + fileLength + " bytes)");
    }
    String header;
    try {
      header = (major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1).newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(prefix, headerStart, (int) headerLen)).toString();
    } catch (CharacterCodingException e) {
      throw err(name, "header is not valid " + (major == 3 ? "UTF-8" : "latin-1"));
    }
    if (header.indexOf('\0') >= 0) {
      // Python refuses source text with a NUL anywhere, comments included, and so does numpy
      throw err(name, "header contains a NUL byte at " + header.indexOf('\0') + ": " + abbreviate(header));
    }
    Object lit;
    try {
      lit = new Literal(header, major < 3).parseAll();
    } catch (IllegalArgumentException e) {
      throw err(name, "header is not a Python literal: " + e.getMessage() + ": " + abbreviate(header));
    }
    if (!(lit instanceof Map<?, ?> d)) {
      throw err(name, "header is not a dictionary: " + abbreviate(header));
    }
    if (!d.keySet().equals(java.util.Set.of("descr", "fortran_order", "shape"))) {
      throw err(name, "header does not contain the correct keys (descr, fortran_order, shape), got " + d.keySet());
    }
    Object descrV = d.get("descr");
    if (descrV instanceof List<?>) {
      throw err(name, "dtype is a structured (record) dtype; arrays of one of " + Dtype.ACCEPTED + " are supported");
    }
    if (!(descrV instanceof String descr)) {
      throw err(name, "'descr' is not a dtype string: " + descrV);
    }
    ValueType type = ValueType.parse(descr);
    if (type == null) {
      String what = descr.endsWith("O") ? "object arrays (pickled Python objects) are not tensors"
          : "the dtype must be one of " + Dtype.ACCEPTED;
      throw err(name, "dtype '" + descr + "' is not supported: " + what);
    }
    int itemSize = type.itemSize();
    if (!(d.get("fortran_order") instanceof Boolean fortran)) {
      throw err(name, "'fortran_order' is not a boolean: " + d.get("fortran_order"));
    }
    if (!(d.get("shape") instanceof Tuple t)) {
      throw err(name, "'shape' is not a tuple of integers: " + d.get("shape"));
    }
    long[] shape = new long[t.items().size()];
    long numel = 1;
    for (int i = 0; i < shape.length; i++) {
      if (!(t.items().get(i) instanceof Long v)) {
        throw err(name, "'shape' is not a tuple of integers: " + t);
      }
      if (v < 0) {
        throw err(name, "shape entry " + v + " is negative");
      }
      shape[i] = v;
      try {
        numel = Math.multiplyExact(numel, v);
      } catch (ArithmeticException e) {
        throw err(name, "shape " + t + " has more elements than fit in 64 bits");
      }
    }
    long want;
    try {
      want = Math.multiplyExact(numel, itemSize);
    } catch (ArithmeticException e) {
      throw err(name, "shape " + Npy.shapeString(shape) + " of " + descr + " needs more bytes than fit in 64 bits");
    }
    long dataOffset = headerStart + headerLen;
    long have = fileLength - dataOffset;
    if (whole && have != want) {
      throw err(name, "data holds " + have + " bytes but shape " + Npy.shapeString(shape) + " of " + descr + " needs "
          + want + " (file truncated or corrupt)");
    }
    return new NpyHeader(descr, type, fortran, shape, dataOffset);
  }

  public long numel() {
    long n = 1;
    for (long s : shape) {
      n *= s;
    }
    return n;
  }

  /** Bytes per element. */
  public int itemSize() {
    return type.itemSize();
  }

  /** True when the data is stored exactly as float32 little-endian C order (no conversion needed). */
  public boolean isPlainF32() {
    return type.isFloat32() && (!fortranOrder || nonUnitDims() <= 1);
  }

  private int nonUnitDims() {
    int k = 0;
    for (long s : shape) {
      if (s != 1) {
        k++;
      }
    }
    return k;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof NpyHeader h && h.descr.equals(descr) && h.fortranOrder == fortranOrder
        && Arrays.equals(h.shape, shape) && h.dataOffset == dataOffset;
  }

  @Override
  public int hashCode() {
    return descr.hashCode() * 31 + Arrays.hashCode(shape);
  }

  @Override
  public String toString() {
    return "NpyHeader[" + descr + ", fortran=" + fortranOrder + ", shape=" + Npy.shapeString(shape) + "]";
  }

  private static String abbreviate(String s) {
    String t = s.strip();
    return t.length() > 200 ? t.substring(0, 200) + "..." : t;
  }

  static TensorFormatException err(String name, String rule) {
    return new TensorFormatException(name + ": not a readable .npy file: " + rule);
  }

  /** A Python tuple literal. */
  record Tuple(List<Object> items) {
    @Override
    public String toString() {
      return items.toString().replace('[', '(').replace(']', ')');
    }
  }

  /**
   * The subset of Python literals numpy headers use, as {@code ast.literal_eval} reads them: dicts,
   * tuples, lists, str (single or double quotes, escapes, an optional u prefix), int (signs,
   * underscores; a Python 2 {@code L} suffix in version 1 and 2 headers, which numpy strips),
   * True, False, None; whitespace and comments between tokens.
   */
  static final class Literal {
    private final String s;
    private final boolean allowLongSuffix;
    private int i;

    Literal(String s, boolean allowLongSuffix) {
      this.s = s;
      this.allowLongSuffix = allowLongSuffix;
    }

    Object parseAll() {
      Object v = value();
      skip();
      if (i != s.length()) {
        throw new IllegalArgumentException("unexpected '" + s.charAt(i) + "' at " + i + " after the literal");
      }
      return v;
    }

    private void skip() {
      while (i < s.length()) {
        char c = s.charAt(i);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
          i++;
        } else if (c == '\\' && i + 1 < s.length() && s.charAt(i + 1) == '\n') {
          if (i + 2 == s.length()) {
            // Python reads a continuation with nothing after it as a cut-off statement
            throw fail("line continuation at the end of the header");
          }
          i += 2;
        } else if (c == '#') {
          while (i < s.length() && s.charAt(i) != '\n') {
            i++;
          }
        } else {
          return;
        }
      }
    }

    private IllegalArgumentException fail(String what) {
      return new IllegalArgumentException(what + " at " + i);
    }

    private Object value() {
      skip();
      if (i >= s.length()) {
        throw fail("unexpected end");
      }
      char c = s.charAt(i);
      if (c == '{') {
        return dict();
      }
      if (c == '(') {
        return tuple();
      }
      if (c == '[') {
        return list();
      }
      if (c == '\'' || c == '"' || ((c == 'u' || c == 'U') && i + 1 < s.length() && (s.charAt(i + 1) == '\''
          || s.charAt(i + 1) == '"'))) {
        return string();
      }
      if (c == '-' || c == '+' || Character.isDigit(c)) {
        return integer();
      }
      if (Character.isLetter(c) || c == '_') {
        int st = i;
        while (i < s.length() && (Character.isLetterOrDigit(s.charAt(i)) || s.charAt(i) == '_')) {
          i++;
        }
        String w = s.substring(st, i);
        switch (w) {
          case "True":
            return Boolean.TRUE;
          case "False":
            return Boolean.FALSE;
          case "None":
            return NONE;
          default:
            i = st;
            throw fail("name '" + w + "' is not a literal");
        }
      }
      throw fail("unexpected '" + c + "'");
    }

    static final Object NONE = new Object() {
      @Override
      public String toString() {
        return "None";
      }
    };

    private Map<Object, Object> dict() {
      i++;
      Map<Object, Object> m = new LinkedHashMap<>();
      while (true) {
        skip();
        if (i < s.length() && s.charAt(i) == '}') {
          i++;
          return m;
        }
        Object k = value();
        if (k instanceof Map || k instanceof List) {
          throw fail("unhashable dict key");
        }
        skip();
        if (i >= s.length() || s.charAt(i) != ':') {
          throw fail("expected ':'");
        }
        i++;
        Object v = value();
        m.remove(k);
        m.put(k, v);
        skip();
        if (i < s.length() && s.charAt(i) == ',') {
          i++;
        } else if (i < s.length() && s.charAt(i) == '}') {
          i++;
          return m;
        } else {
          throw fail("expected ',' or '}'");
        }
      }
    }

    private Object tuple() {
      i++;
      List<Object> items = new ArrayList<>();
      boolean comma = false;
      while (true) {
        skip();
        if (i < s.length() && s.charAt(i) == ')') {
          i++;
          // (x) is x, not a tuple; () and (x,) are tuples
          return items.size() == 1 && !comma ? items.get(0) : new Tuple(List.copyOf(items));
        }
        items.add(value());
        skip();
        if (i < s.length() && s.charAt(i) == ',') {
          i++;
          comma = true;
        } else if (i < s.length() && s.charAt(i) == ')') {
          comma = items.size() > 1 || comma;
        } else {
          throw fail("expected ',' or ')'");
        }
      }
    }

    private List<Object> list() {
      i++;
      List<Object> items = new ArrayList<>();
      while (true) {
        skip();
        if (i < s.length() && s.charAt(i) == ']') {
          i++;
          return items;
        }
        items.add(value());
        skip();
        if (i < s.length() && s.charAt(i) == ',') {
          i++;
        } else if (i >= s.length() || s.charAt(i) != ']') {
          throw fail("expected ',' or ']'");
        }
      }
    }

    private String string() {
      if (s.charAt(i) == 'u' || s.charAt(i) == 'U') {
        i++;
      }
      char q = s.charAt(i++);
      boolean triple = i + 1 < s.length() && s.charAt(i) == q && s.charAt(i + 1) == q;
      if (triple) {
        i += 2;
      }
      StringBuilder b = new StringBuilder();
      while (true) {
        if (i >= s.length()) {
          throw fail("unterminated string");
        }
        char c = s.charAt(i++);
        if (c == q) {
          if (!triple) {
            return b.toString();
          }
          if (i + 1 < s.length() && s.charAt(i) == q && s.charAt(i + 1) == q) {
            i += 2;
            return b.toString();
          }
          b.append(c);
        } else if (c == '\\') {
          if (i >= s.length()) {
            throw fail("unterminated string");
          }
          char e = s.charAt(i++);
          switch (e) {
            case '\n': break;
            case '\\': b.append('\\'); break;
            case '\'': b.append('\''); break;
            case '"': b.append('"'); break;
            case 'n': b.append('\n'); break;
            case 't': b.append('\t'); break;
            case 'r': b.append('\r'); break;
            case '0': b.append('\0'); break;
            case 'x': {
              if (i + 2 > s.length()) {
                throw fail("truncated \\x escape");
              }
              b.append((char) Integer.parseInt(s.substring(i, i + 2), 16));
              i += 2;
              break;
            }
            default:
              b.append('\\').append(e);
          }
        } else if ((c == '\n' || c == '\r') && !triple) {
          throw fail("line break inside a string");
        } else {
          b.append(c);
        }
      }
    }

    private Long integer() {
      int st = i;
      boolean neg = false;
      while (i < s.length() && (s.charAt(i) == '-' || s.charAt(i) == '+')) {
        if (s.charAt(i) == '-') {
          neg = !neg;
        }
        i++;
        skip();
      }
      int ds = i;
      StringBuilder digits = new StringBuilder();
      while (i < s.length() && (Character.isDigit(s.charAt(i)) || s.charAt(i) == '_')) {
        char c = s.charAt(i);
        if (c == '_' && (i == ds || i + 1 >= s.length() || !Character.isDigit(s.charAt(i + 1)))) {
          throw fail("misplaced '_' in a number");
        }
        if (c != '_') {
          digits.append(c);
        }
        i++;
      }
      if (digits.length() == 0) {
        i = st;
        throw fail("expected a number");
      }
      if (digits.length() > 1 && digits.charAt(0) == '0' && !digits.toString().matches("0+")) {
        throw fail("leading zeros in a decimal integer");
      }
      if (i < s.length() && (s.charAt(i) == 'L' || s.charAt(i) == 'l') && allowLongSuffix) {
        i++;
      }
      if (i < s.length() && (s.charAt(i) == '.' || s.charAt(i) == 'e' || s.charAt(i) == 'E' || s.charAt(i) == 'j'
          || Character.isLetter(s.charAt(i)))) {
        throw fail("not an integer");
      }
      java.math.BigInteger v = new java.math.BigInteger(digits.toString());
      if (neg) {
        v = v.negate();
      }
      if (v.bitLength() > 63) {
        throw fail("integer " + v + " does not fit 64 bits");
      }
      return v.longValue();
    }
  }
}
