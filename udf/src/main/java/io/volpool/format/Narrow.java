package io.volpool.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;

/**
 * float32 results narrowed to an output dtype ({@link Dtype#FLOAT16} or {@link Dtype#BFLOAT16}) with
 * the bits PyTorch's {@code tensor.to(torch.float16)} / {@code .to(torch.bfloat16)} give on the CPU:
 * round to nearest, ties to even; float16 overflows to infinity (anything of magnitude 65520 or more);
 * a NaN becomes float16's {@code 0x7e00} with its sign, and bfloat16's {@code 0xffff}. The GPU's
 * kernels ({@code narrow_f16}, {@code narrow_bf16} in volpool.cu) do the same arithmetic. Stateless.
 */
public final class Narrow {
  private Narrow() {}

  /** The dtypes an output may have, for errors and the settings table. */
  public static final String OUTPUT_DTYPES = "float32, float16 or bfloat16";

  /** True for the dtypes an output may have. */
  public static boolean isOutput(Dtype d) {
    return d == Dtype.FLOAT32 || d == Dtype.FLOAT16 || d == Dtype.BFLOAT16;
  }

  /**
   * float32 to IEEE binary16, as PyTorch's CPU conversion (c10's {@code fp16_ieee_from_fp32_value}):
   * scaling by powers of two moves the rounding point to float16's and lets overflow reach infinity.
   */
  public static short toF16(float f) {
    int w = Float.floatToRawIntBits(f);
    int shl1 = w << 1;
    int sign = w & 0x80000000;
    if (Integer.compareUnsigned(shl1, 0xff000000) > 0) {
      return (short) ((sign >>> 16) | 0x7e00);
    }
    float base = (Math.abs(f) * 0x1.0p+112f) * 0x1.0p-110f;
    int bias = shl1 & 0xff000000;
    if (Integer.compareUnsigned(bias, 0x71000000) < 0) {
      bias = 0x71000000;
    }
    base = Float.intBitsToFloat((bias >>> 1) + 0x07800000) + base;
    int bits = Float.floatToRawIntBits(base);
    int expBits = (bits >>> 13) & 0x7c00;
    int mantissaBits = bits & 0x0fff;
    return (short) ((sign >>> 16) | (expBits + mantissaBits));
  }

  /** float32 to bfloat16: the upper 16 bits, rounded to nearest even; NaN is {@code 0xffff}. */
  public static short toBf16(float f) {
    if (Float.isNaN(f)) {
      return (short) 0xffff;
    }
    int u = Float.floatToRawIntBits(f);
    return (short) ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16);
  }

  /** {@code f} as {@code to}'s bits ({@code to} is float16 or bfloat16). */
  public static short to(Dtype to, float f) {
    return to == Dtype.FLOAT16 ? toF16(f) : toBf16(f);
  }

  /**
   * Narrows {@code count} little-endian floats at byte {@code at} of {@code buf} in place: element
   * {@code i} moves from {@code at + 4i} to {@code at + 2i}, in order, so no value is overwritten
   * before it is read. Does nothing for float32.
   */
  public static void inPlace(ByteBuffer buf, long at, long count, Dtype to) {
    if (to == Dtype.FLOAT32) {
      return;
    }
    ByteBuffer b = buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int base = Math.toIntExact(at);
    for (int i = 0; i < count; i++) {
      b.putShort(base + 2 * i, to(to, b.getFloat(base + 4 * i)));
    }
  }

  /**
   * Writes {@code count} floats of {@code src} from {@code srcAt} on as {@code to}'s elements
   * (little-endian) into {@code dst} from byte {@code dstAt} on.
   */
  public static void put(FloatBuffer src, int srcAt, ByteBuffer dst, int dstAt, int count, Dtype to) {
    ByteBuffer d = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (to == Dtype.FLOAT32) {
      d.position(dstAt);
      d.asFloatBuffer().put(0, src, srcAt, count);
      return;
    }
    for (int i = 0; i < count; i++) {
      d.putShort(dstAt + 2 * i, to(to, src.get(srcAt + i)));
    }
  }

  /** The same from a float array. */
  public static void put(float[] src, int srcAt, ByteBuffer dst, int dstAt, int count, Dtype to) {
    put(FloatBuffer.wrap(src), srcAt, dst, dstAt, count, to);
  }
}
