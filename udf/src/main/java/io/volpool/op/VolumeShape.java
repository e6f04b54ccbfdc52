package io.volpool.op;

import java.io.Serializable;

/** The shape {@code [C, D, H, W]} of one float32 volume. Immutable value. */
public record VolumeShape(int c, int d, int h, int w) implements Serializable {
  public VolumeShape {
    if (c <= 0 || d <= 0 || h <= 0 || w <= 0) {
      // the fields are not assigned yet in a compact constructor: name the parameters
      throw new IllegalArgumentException(
          "volume shape must have four positive dimensions [C, D, H, W], got [" + c + ", " + d + ", " + h + ", " + w + "]");
    }
    try {
      // every size derived from a shape (elements, bytes, planes) is then exact in a long
      Math.multiplyExact(Math.multiplyExact(Math.multiplyExact(Math.multiplyExact((long) c, d), h), w), (long) Float.BYTES);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("volume shape [" + c + ", " + d + ", " + h + ", " + w + "] has more bytes than a"
          + " 64-bit size can count (C*D*H*W*4 > 2^63 - 1)");
    }
  }

  /** Builds a shape from a 4-element array; anything else is an error naming the rule. */
  public static VolumeShape of(int[] dims) {
    if (dims == null || dims.length != 4) {
      throw new IllegalArgumentException("volume shape must have 4 dimensions [C, D, H, W], got "
          + (dims == null ? "none" : java.util.Arrays.toString(dims)));
    }
    return new VolumeShape(dims[0], dims[1], dims[2], dims[3]);
  }

  public long numel() {
    return (long) c * d * h * w;
  }

  public long bytes() {
    return numel() * Float.BYTES;
  }

  /** Elements in one channel, {@code D*H*W}. */
  public long plane() {
    return (long) d * h * w;
  }

  public int[] toArray() {
    return new int[] {c, d, h, w};
  }

  @Override
  public String toString() {
    return "[" + c + ", " + d + ", " + h + ", " + w + "]";
  }
}
