package io.volpool.format;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * float32 narrowed to float16 and bfloat16 as PyTorch's {@code .to(torch.float16)} and
 * {@code .to(torch.bfloat16)} give them on the CPU, bit for bit, over the values
 * {@code scripts/golden/make-dtype-golden.py} chose: every rounding tie, both sides of float16's
 * overflow (65504, 65519.99, 65520), its subnormals and their underflow, infinities and NaN.
 */
class NarrowTest {
  @ParameterizedTest
  @ValueSource(strings = {"float16", "bfloat16"})
  void narrowsAsPytorchDoesBitForBit(String name) throws IOException {
    ByteBuffer in = ValueTypeTest.npyData(ValueTypeTest.DIR.resolve("f32_narrow_in.npy")).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer want = ValueTypeTest.npyData(ValueTypeTest.DIR.resolve("f32_to_" + name + ".npy"))
        .order(ByteOrder.LITTLE_ENDIAN);
    Dtype to = name.equals("float16") ? Dtype.FLOAT16 : Dtype.BFLOAT16;
    int n = in.remaining() / 4;
    assertThat(n).isGreaterThan(10_000);
    assertThat(want.remaining()).isEqualTo(2 * n);
    // the in-place pass the CPU backend and the slab sinks use
    ByteBuffer buf = ByteBuffer.allocate(4 * n).order(ByteOrder.LITTLE_ENDIAN).put(in.duplicate());
    Narrow.inPlace(buf, 0, n, to);
    for (int i = 0; i < n; i++) {
      float f = in.getFloat(4 * i);
      short w = want.getShort(2 * i);
      short g = Narrow.to(to, f);
      if (g != w || buf.getShort(2 * i) != w) {
        throw new AssertionError(name + ": element " + i + " = " + f + " (0x" + Integer.toHexString(Float.floatToRawIntBits(f))
            + ") narrowed to 0x" + Integer.toHexString(g & 0xffff) + ", PyTorch gives 0x" + Integer.toHexString(w & 0xffff));
      }
    }
  }

  @Test
  void keepsTheSignOfNanInFloat16AsPytorchDoes() {
    // torch 1.13: tensor([-nan, nan]).to(float16) -> 0xfe00, 0x7e00; .to(bfloat16) -> 0xffff, 0xffff
    assertThat(Narrow.toF16(Float.intBitsToFloat(0xffc00000)) & 0xffff).isEqualTo(0xfe00);
    assertThat(Narrow.toF16(Float.NaN) & 0xffff).isEqualTo(0x7e00);
    assertThat(Narrow.toBf16(Float.intBitsToFloat(0xffc00000)) & 0xffff).isEqualTo(0xffff);
    assertThat(Narrow.toF16(65504f) & 0xffff).isEqualTo(0x7bff);
    assertThat(Narrow.toF16(65520f) & 0xffff).isEqualTo(0x7c00);
    assertThat(Narrow.toF16(-1e30f) & 0xffff).isEqualTo(0xfc00);
  }

  @Test
  void putFromFloatsEqualsInPlace() {
    float[] v = {1f, -2.5f, 1e-7f, 70000f, Float.NaN, 3.14159f};
    for (Dtype to : new Dtype[] {Dtype.FLOAT16, Dtype.BFLOAT16, Dtype.FLOAT32}) {
      ByteBuffer a = ByteBuffer.allocate(4 + 4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
      for (int i = 0; i < v.length; i++) {
        a.putFloat(4 + 4 * i, v[i]);
      }
      ByteBuffer b = ByteBuffer.allocate(4 + 4 * v.length);
      Narrow.put(v, 0, b, 4, v.length, to);
      Narrow.inPlace(a, 4, v.length, to);
      int bytes = v.length * (to == Dtype.FLOAT32 ? 4 : 2);
      assertThat(java.util.Arrays.copyOfRange(b.array(), 4, 4 + bytes)).isEqualTo(java.util.Arrays.copyOfRange(a.array(),
          4, 4 + bytes));
    }
  }
}
