package io.volpool.format;

/** Converts IEEE half (F16) and bfloat16 (BF16) bit patterns to float32; stateless. */
public final class HalfFloats {
  private HalfFloats() {}

  /** IEEE 754 binary16 to float32, exact (subnormals and infinities included; NaN quieted). */
  public static float f16ToFloat(short bits) {
    int h = bits & 0xffff;
    int sign = (h & 0x8000) << 16;
    int exp = (h >>> 10) & 0x1f;
    int mant = h & 0x3ff;
    if (exp == 0) {
      // zero or subnormal: mant * 2^-24
      float v = mant * 0x1p-24f;
      return sign != 0 ? -v : v;
    }
    if (exp == 0x1f) {
      // infinities; a NaN comes back quiet with its payload, as PyTorch's (and x86's F16C) conversion gives it
      return Float.intBitsToFloat(sign | 0x7f800000 | (mant == 0 ? 0 : 0x400000 | (mant << 13)));
    }
    return Float.intBitsToFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
  }

  /** bfloat16 to float32, exact: the upper 16 bits of a float32. */
  public static float bf16ToFloat(short bits) {
    return Float.intBitsToFloat((bits & 0xffff) << 16);
  }
}
