package io.volpool.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.ops.fused.FusedModel;
import io.volpool.ops.fused.FusedOp;
import io.volpool.testing.Golden;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** safetensors reading: PyTorch-written golden models, every dtype we convert, and each validation rule. */
class SafeTensorsTest {
  /** Builds a safetensors file from a JSON header and raw data. */
  static byte[] file(String header, byte[] data) {
    byte[] h = header.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(8 + h.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(h.length).put(h).put(data);
    return b.array();
  }

  @Test
  void readsPyTorchStateDict() throws IOException {
    Golden.Case c = Golden.get("fused_seed");
    SafeTensors st = SafeTensors.read(Files.readAllBytes(c.model()), "model.safetensors");
    assertThat(st.tensors().keySet()).containsExactlyInAnyOrder("bias", "conv_transpose.bias", "conv_transpose.weight",
        "scale1", "scale2");
    assertThat(st.require("conv_transpose.weight").shape()).containsExactly(3, 16, 3, 3, 3);
    assertThat(st.require("scale1").values()).containsExactly(0.5f);
    assertThat(st.require("bias").shape()).containsExactly(16, 1, 1, 1);
    float[] w = Golden.read(c.dir().resolve("weight.npy")).toFloatArray();
    assertThat(st.require("conv_transpose.weight").values()).containsExactly(w);
  }

  @Test
  void convertsF64F16Bf16() {
    ByteBuffer d = ByteBuffer.allocate(8 + 4 + 4).order(ByteOrder.LITTLE_ENDIAN);
    d.putDouble(-2.5);
    d.putShort((short) 0x3c00).putShort((short) 0xc000); // f16 1.0, -2.0
    d.putShort((short) 0x3fc0).putShort((short) 0x4049); // bf16 1.5, 3.140625
    String h = "{\"a\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]},"
        + "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[8,12]},"
        + "\"c\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[12,16]},\"__metadata__\":{\"stride\":\"2\"}}";
    SafeTensors st = SafeTensors.read(file(h, d.array()), "t");
    assertThat(st.require("a").values()).containsExactly(-2.5f);
    assertThat(st.require("b").values()).containsExactly(1f, -2f);
    assertThat(st.require("c").values()).containsExactly(1.5f, 3.140625f);
    assertThat(st.metadata()).containsEntry("stride", "2");
  }

  @Test
  void halfFloatEdgeCases() {
    assertThat(HalfFloats.f16ToFloat((short) 0x0001)).isEqualTo(0x1p-24f);
    assertThat(HalfFloats.f16ToFloat((short) 0x7bff)).isEqualTo(65504f);
    assertThat(HalfFloats.f16ToFloat((short) 0x7c00)).isEqualTo(Float.POSITIVE_INFINITY);
    assertThat(HalfFloats.f16ToFloat((short) 0x7e00)).isNaN();
    assertThat(HalfFloats.f16ToFloat((short) 0x8000)).isEqualTo(-0f);
  }

  @Test
  void rejectsHugeHeader() {
    ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40);
    assertThatThrownBy(() -> SafeTensors.read(b.array(), "big.safetensors")).isInstanceOf(TensorFormatException.class)
        .hasMessageContaining("big.safetensors").hasMessageContaining("header length 1099511627776 is outside");
  }

  @Test
  void rejectsOffsetsOutsideData() {
    String h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    assertThatThrownBy(() -> SafeTensors.read(file(h, new byte[4]), "m")).hasMessageContaining("tensor 'w'")
        .hasMessageContaining("outside the 4-byte data section");
  }

  @Test
  void rejectsSizeNotMatchingShape() {
    String h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}";
    assertThatThrownBy(() -> SafeTensors.read(file(h, new byte[8]), "m"))
        .hasMessageContaining("tensor 'w' has 8 bytes but shape [3] of F32 needs 12");
  }

  @Test
  void rejectsDuplicateKeys() {
    String h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        + "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    assertThatThrownBy(() -> SafeTensors.read(file(h, new byte[4]), "m")).hasMessageContaining("names a key twice")
        .hasMessageContaining("'w'");
  }

  @Test
  void rejectsUnsupportedDtype() {
    String h = "{\"w\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
    assertThatThrownBy(() -> SafeTensors.read(file(h, new byte[8]), "m"))
        .hasMessageContaining("tensor 'w' has dtype 'I64'; supported: F32, F64, F16, BF16");
  }

  @Test
  void missingKeyIsNamedWithTheKeysPresent() {
    String h = "{\"scale1\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}";
    SafeTensors st = SafeTensors.read(file(h, new byte[4]), "model.st");
    assertThatThrownBy(() -> FusedModel.load(st, FusedModel.Params.unset()))
        .hasMessageContaining("model.st").hasMessageContaining("missing tensor 'conv_transpose.weight'")
        .hasMessageContaining("keys present: [scale1]");
  }

  @Test
  void metadataGivesParametersAndConflictsAreErrors() throws IOException {
    // rewrite the golden model with __metadata__
    Golden.Case c = Golden.get("fused_k5s3p2_op1");
    byte[] orig = Files.readAllBytes(c.model());
    long n = ByteBuffer.wrap(orig).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
    String header = new String(orig, 8, (int) n, StandardCharsets.UTF_8).trim();
    String withMeta = header.substring(0, header.length() - 1)
        + ",\"__metadata__\":{\"stride\":\"3\",\"padding\":\"2\",\"output_padding\":\"1\",\"pool_kernel\":\"2\"}}";
    ByteArrayOutputStream data = new ByteArrayOutputStream();
    data.write(orig, 8 + (int) n, orig.length - 8 - (int) n);
    SafeTensors st = SafeTensors.read(file(withMeta, data.toByteArray()), "meta.safetensors");
    FusedOp op = FusedModel.load(st, FusedModel.Params.unset());
    assertThat(op.stride()).isEqualTo(3);
    assertThat(op.padding()).isEqualTo(2);
    assertThat(op.outputPadding()).isEqualTo(1);
    assertThat(op.kernel()).isEqualTo(5);
    assertThatThrownBy(() -> FusedModel.load(st, new FusedModel.Params(OptionalInt.of(2), OptionalInt.empty(),
        OptionalInt.empty(), OptionalInt.empty())))
        .hasMessageContaining("setting stride=2 contradicts the model file meta.safetensors whose __metadata__ says stride=3");
  }
}
