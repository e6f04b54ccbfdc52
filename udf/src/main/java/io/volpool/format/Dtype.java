package io.volpool.format;

import java.util.Locale;

/**
 * The element types a stored volume may have, by their numpy names, each widened to float32 exactly
 * as PyTorch's {@code tensor.to(torch.float32)} does: integers of up to 16 bits and float16 and
 * bfloat16 exactly, int32 and float64 rounded to the nearest float32 (ties to even). Stateless.
 */
public enum Dtype {
  UINT8("uint8", 'u', 1),
  INT8("int8", 'i', 1),
  UINT16("uint16", 'u', 2),
  INT16("int16", 'i', 2),
  INT32("int32", 'i', 4),
  FLOAT16("float16", 'f', 2),
  BFLOAT16("bfloat16", '\0', 2),
  FLOAT32("float32", 'f', 4),
  FLOAT64("float64", 'f', 8);

  /** What a dtype string may be, for errors. */
  public static final String ACCEPTED = "uint8, int8, uint16, int16, int32, float16, bfloat16, float32 or float64"
      + " (numpy names), or an array-protocol string such as <u2, >i2, |u1, <f2, <f4";

  private final String numpyName;
  private final char kind;
  private final int itemSize;

  Dtype(String numpyName, char kind, int itemSize) {
    this.numpyName = numpyName;
    this.kind = kind;
    this.itemSize = itemSize;
  }

  /** numpy's name: {@code int16}, {@code bfloat16}, ... */
  public String numpyName() {
    return numpyName;
  }

  /** Bytes per element. */
  public int itemSize() {
    return itemSize;
  }

  /** The array-protocol string of this dtype in the given byte order ({@code <i2}, {@code |u1}); null for bfloat16. */
  public String descr(boolean bigEndian) {
    if (kind == '\0') {
      return null;
    }
    return (itemSize == 1 ? "|" : bigEndian ? ">" : "<") + kind + itemSize;
  }

  /** The dtype of a kind letter and size ({@code 'i', 2}), or null. */
  static Dtype of(char kind, int itemSize) {
    for (Dtype d : values()) {
      if (d.kind == kind && d.itemSize == itemSize) {
        return d;
      }
    }
    return null;
  }

  /** The dtype of a numpy name, any case; null if none. */
  static Dtype named(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    for (Dtype d : values()) {
      if (d.numpyName.equals(n)) {
        return d;
      }
    }
    return null;
  }
}
