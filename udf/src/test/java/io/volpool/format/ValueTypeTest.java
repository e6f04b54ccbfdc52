package io.volpool.format;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each dtype widened to float32 as PyTorch's {@code tensor.to(torch.float32)} does, bit for bit, over
 * every bit pattern of the 8- and 16-bit types and the extremes and ties of int32 and float64
 * ({@code scripts/golden/make-dtype-golden.py} wrote the references), in both byte orders.
 */
class ValueTypeTest {
  static final Path DIR = io.volpool.testing.Golden.dtypesDir();

  static ByteBuffer npyData(Path p) throws IOException {
    byte[] b = Files.readAllBytes(p);
    NpyHeader h = NpyHeader.parse(b, b.length, p.toString(), NpyHeader.DEFAULT_MAX_HEADER_BYTES);
    return ByteBuffer.wrap(b, (int) h.dataOffset(), b.length - (int) h.dataOffset()).slice();
  }

  @ParameterizedTest
  @ValueSource(strings = {"uint8", "int8", "uint16", "int16", "int32", "float16", "bfloat16", "float64"})
  void widensAsPytorchDoesBitForBit(String name) throws IOException {
    ByteBuffer stored = npyData(DIR.resolve(name + ".npy"));
    ByteBuffer want = npyData(DIR.resolve(name + "_f32.npy")).order(ByteOrder.LITTLE_ENDIAN);
    ValueType t = ValueType.parse(name);
    int n = stored.remaining() / t.itemSize();
    assertThat(want.remaining()).isEqualTo(n * 4);
    for (boolean big : new boolean[] {false, true}) {
      ByteBuffer src = big ? swapped(stored, t.itemSize()) : stored.duplicate();
      ByteBuffer got = ByteBuffer.allocate(n * 4).order(ByteOrder.LITTLE_ENDIAN);
      new ValueType(t.dtype(), big).widen(src, n, got, Rescale.IDENTITY);
      assertThat(src.remaining()).isZero();
      assertThat(got.position()).isEqualTo(n * 4);
      for (int i = 0; i < n; i++) {
        int g = got.getInt(i * 4);
        int w = want.getInt(i * 4);
        if (g != w) {
          throw new AssertionError(name + (big ? " (big-endian)" : "") + ": element " + i + " widened to "
              + Float.intBitsToFloat(g) + " (0x" + Integer.toHexString(g) + "), PyTorch gives " + Float.intBitsToFloat(w)
              + " (0x" + Integer.toHexString(w) + ")");
        }
      }
    }
  }

  static ByteBuffer swapped(ByteBuffer b, int size) {
    ByteBuffer out = ByteBuffer.allocate(b.remaining());
    for (int i = 0; i < b.remaining(); i += size) {
      for (int k = 0; k < size; k++) {
        out.put(i + k, b.get(b.position() + i + size - 1 - k));
      }
    }
    return out;
  }

  @Test
  void parsesNumpyNamesAndArrayProtocolStrings() {
    assertThat(ValueType.parse("int16")).isEqualTo(new ValueType(Dtype.INT16, false));
    assertThat(ValueType.parse("<i2")).isEqualTo(new ValueType(Dtype.INT16, false));
    assertThat(ValueType.parse(">i2")).isEqualTo(new ValueType(Dtype.INT16, true));
    assertThat(ValueType.parse("|u1")).isEqualTo(new ValueType(Dtype.UINT8, false));
    assertThat(ValueType.parse(">u1")).isEqualTo(new ValueType(Dtype.UINT8, false));
    assertThat(ValueType.parse("=f4")).isEqualTo(ValueType.FLOAT32);
    assertThat(ValueType.parse("f8")).isEqualTo(new ValueType(Dtype.FLOAT64, false));
    assertThat(ValueType.parse("<f2")).isEqualTo(new ValueType(Dtype.FLOAT16, false));
    assertThat(ValueType.parse("bfloat16")).isEqualTo(new ValueType(Dtype.BFLOAT16, false));
    assertThat(ValueType.parse("float32")).isEqualTo(ValueType.FLOAT32);
    for (String bad : new String[] {"", "float", "Float32", "int64", "<i8", "<u4", "|i2", "<b1", "<f16", "complex64",
        "<c8", "bf16", "<V2", "<f"}) {
      assertThat(ValueType.parse(bad)).as(bad).isNull();
    }
    assertThat(ValueType.parse(null)).isNull();
  }

  @Test
  void namesItselfAsAWriterRecordsIt() {
    assertThat(ValueType.parse("<i2").toString()).isEqualTo("int16");
    assertThat(ValueType.parse(">i2").toString()).isEqualTo(">i2");
    assertThat(Dtype.FLOAT16.descr(false)).isEqualTo("<f2");
    assertThat(Dtype.UINT8.descr(true)).isEqualTo("|u1");
    assertThat(Dtype.BFLOAT16.descr(false)).isNull();
  }

  @Test
  void rescalesInFloat32WithTwoRoundingsAndLeavesNegativeZeroAloneWithout() {
    ByteBuffer src = ByteBuffer.allocate(6).order(ByteOrder.LITTLE_ENDIAN).putShort((short) -1024).putShort((short) 3000)
        .putShort((short) 0x8000).flip();
    ByteBuffer out = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
    ValueType.parse("int16").widen(src, 3, out, new Rescale(0.1f, -1024f));
    assertThat(out.getFloat(0)).isEqualTo(-1024f * 0.1f + -1024f);
    assertThat(out.getFloat(4)).isEqualTo(3000f * 0.1f - 1024f);
    assertThat(out.getFloat(8)).isEqualTo(-32768f * 0.1f - 1024f);
    ByteBuffer z = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(-0f).flip();
    ByteBuffer zo = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
    ValueType.FLOAT32.widen(z, 1, zo, Rescale.IDENTITY);
    assertThat(Float.floatToRawIntBits(zo.getFloat(0))).isEqualTo(Float.floatToRawIntBits(-0f));
  }
}
