package io.volpool.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.testing.Golden;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** .npy reading of numpy-written files (every version, byte order, dtype and layout we accept) and writing. */
class NpyTest {
  static byte[] fixture(String name) throws IOException {
    try (InputStream in = NpyTest.class.getResourceAsStream("/npy/" + name)) {
      return in.readAllBytes();
    }
  }

  /** The values numpy wrote into every fixture: arange(120).reshape(2,3,4,5) * 0.25 - 7. */
  static float[] expected() {
    float[] v = new float[120];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (i * 0.25 - 7);
    }
    return v;
  }

  @ParameterizedTest
  @ValueSource(strings = {"c_f4.npy", "f8.npy", "be_f4.npy", "be_f8.npy", "fortran_f4.npy", "v2_f4.npy", "v3_f4.npy"})
  void readsNumpyFiles(String name) throws IOException {
    NpyArray a = Npy.read(fixture(name), name);
    assertThat(a.shape()).containsExactly(2, 3, 4, 5);
    assertThat(a.toFloatArray()).containsExactly(expected());
  }

  @Test
  void readsGoldenInputsWrittenByNumpy() {
    NpyArray a = Golden.read(Golden.get("fused_seed").dir().resolve("input.npy"));
    assertThat(a.shape()).containsExactly(2, 3, 16, 32, 32);
    assertThat(a.numel()).isEqualTo(2L * 3 * 16 * 32 * 32);
  }

  @Test
  void roundTripsAndPadsHeaderTo64Bytes() throws IOException {
    NpyArray a = NpyArray.of(new long[] {2, 3, 4, 5}, expected());
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Npy.write(a, out);
    byte[] b = out.toByteArray();
    assertThat(b[6]).as("major version").isEqualTo((byte) 1);
    int headerEnd = 10 + ((b[8] & 0xff) | (b[9] & 0xff) << 8);
    assertThat(headerEnd % 64).isZero();
    assertThat(b[headerEnd - 1]).isEqualTo((byte) '\n');
    NpyArray back = Npy.read(b, "roundtrip");
    assertThat(back.shape()).containsExactly(2, 3, 4, 5);
    assertThat(back.toFloatArray()).containsExactly(expected());
    assertThat(Arrays.copyOfRange(b, 0, headerEnd)).isEqualTo(Arrays.copyOfRange(fixture("c_f4.npy"), 0, headerEnd));
  }

  @Test
  void oneDimensionalShapeHasTrailingComma() {
    assertThat(new String(Npy.header(new long[] {7}), java.nio.charset.StandardCharsets.ISO_8859_1)).contains("'shape': (7,)");
  }

  @Test
  void writtenFilesOpenInNumpy(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("w.npy");
    try (var os = Files.newOutputStream(f)) {
      Npy.write(NpyArray.of(new long[] {2, 3, 4, 5}, expected()), os);
    }
    Process p;
    try {
      p = new ProcessBuilder("python3", "-c", "import numpy as n,sys; a=n.load(sys.argv[1]); "
          + "assert a.dtype==n.float32 and a.shape==(2,3,4,5); assert (a.ravel()==n.arange(120)*0.25-7).all(); print('ok')",
          f.toString()).redirectErrorStream(true).start();
    } catch (IOException e) {
      Assumptions.abort("python3 not available: " + e.getMessage());
      return;
    }
    p.waitFor(60, TimeUnit.SECONDS);
    String text = new String(p.getInputStream().readAllBytes());
    Assumptions.assumeFalse(text.contains("No module named"), "numpy not installed for python3");
    assertThat(text.trim()).as("numpy.load output").isEqualTo("ok");
  }

  @Test
  void rejectsObjectArrays() throws IOException {
    assertThatThrownBy(() -> Npy.read(fixture("object.npy"), "object.npy"))
        .isInstanceOf(TensorFormatException.class)
        .hasMessageContaining("object.npy").hasMessageContaining("dtype '|O' is not supported")
        .hasMessageContaining("object arrays");
  }

  @Test
  void widensNarrowDtypesAsNumpyWroteThem() throws IOException {
    // int32.npy is numpy's arange(24).reshape(2, 3, 4); f2.npy is arange(-7, 23, 0.25) as float16, shape (2, 3, 4, 5)
    NpyArray i = Npy.read(fixture("int32.npy"), "int32.npy");
    assertThat(i.shape()).containsExactly(2L, 3L, 4L);
    NpyArray h = Npy.read(fixture("f2.npy"), "f2.npy");
    assertThat(h.shape()).containsExactly(2L, 3L, 4L, 5L);
    for (int k = 0; k < 24; k++) {
      assertThat(i.data().order(java.nio.ByteOrder.LITTLE_ENDIAN).getFloat(4 * k)).isEqualTo(k);
    }
    for (int k = 0; k < 120; k++) {
      assertThat(h.data().order(java.nio.ByteOrder.LITTLE_ENDIAN).getFloat(4 * k)).isEqualTo(-7f + 0.25f * k);
    }
  }

  @Test
  void aShapeOfMoreElementsThanFitIn64BitsIsNamedAsTheHeaderSaysIt() {
    String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 9223372036854775807, 40, 40), }";
    int pad = 64 - (10 + dict.length() + 1) % 64;
    String header = dict + " ".repeat(pad) + "\n";
    java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
    b.writeBytes(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (byte) header.length(), 0});
    b.writeBytes(header.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    assertThatThrownBy(() -> Npy.read(b.toByteArray(), "x.npy")).isInstanceOf(TensorFormatException.class)
        .hasMessageContaining("shape (2, 9223372036854775807, 40, 40) has more elements than fit in 64 bits");
  }

  @ParameterizedTest
  @ValueSource(strings = {"<i8", "<u4", "|b1", "<c8", "<f16", "<U3", "|V2"})
  void rejectsOtherDtypesNamingTheOnesItTakes(String descr) {
    String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }";
    int pad = 64 - (10 + dict.length() + 1) % 64;
    String header = dict + " ".repeat(pad) + "\n";
    java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
    b.writeBytes(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (byte) header.length(), 0});
    b.writeBytes(header.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    b.writeBytes(new byte[16]);
    assertThatThrownBy(() -> Npy.read(b.toByteArray(), "x.npy")).isInstanceOf(TensorFormatException.class)
        .hasMessageContaining("x.npy").hasMessageContaining("dtype '" + descr + "' is not supported")
        .hasMessageContaining("uint8, int8, uint16, int16, int32, float16, bfloat16, float32 or float64");
  }

  @Test
  void rejectsStructuredDtypes() throws IOException {
    assertThatThrownBy(() -> Npy.read(fixture("structured.npy"), "s.npy")).hasMessageContaining("structured");
  }

  @Test
  void rejectsTruncatedData() throws IOException {
    byte[] b = fixture("c_f4.npy");
    byte[] cut = Arrays.copyOf(b, b.length - 4);
    assertThatThrownBy(() -> Npy.read(cut, "cut.npy")).hasMessageContaining("cut.npy")
        .hasMessageContaining("data holds 476 bytes but shape (2, 3, 4, 5) of <f4 needs 480");
  }

  @Test
  void rejectsBadMagicAndVersion() throws IOException {
    assertThatThrownBy(() -> Npy.read("hello world, not numpy".getBytes(), "x.npy")).hasMessageContaining("magic");
    byte[] b = fixture("c_f4.npy").clone();
    b[6] = 9;
    assertThatThrownBy(() -> Npy.read(b, "v9.npy")).hasMessageContaining("unsupported .npy version 9.0");
    assertThatThrownBy(() -> Npy.read(new byte[] {1, 2}, "tiny.npy")).hasMessageContaining("shorter than");
  }

  @Test
  void rejectsHeaderRunningPastEnd() throws IOException {
    byte[] b = Arrays.copyOf(fixture("c_f4.npy"), 40);
    assertThatThrownBy(() -> Npy.read(b, "h.npy")).hasMessageContaining("runs past the end of the file");
  }

  @Test
  void rejectsALineContinuationThatEndsTheHeader() throws IOException {
    // Python reads "{...} \\<newline>" at the end of the input as a statement cut off, and numpy
    // refuses the file (SyntaxError, or TokenError on its Python 2 path); found by ParserFuzzTest.
    byte[] b = fixture("c_f4.npy").clone();
    int headerEnd = 10 + ((b[8] & 0xff) | (b[9] & 0xff) << 8);
    assertThat(b[headerEnd - 1]).isEqualTo((byte) '\n');
    assertThat(b[headerEnd - 2]).isEqualTo((byte) ' ');
    b[headerEnd - 2] = '\\';
    assertThatThrownBy(() -> Npy.read(b, "cont.npy")).isInstanceOf(TensorFormatException.class)
        .hasMessageContaining("line continuation");
    // the same continuation with anything after it is whitespace to Python, and to us
    byte[] c = fixture("c_f4.npy").clone();
    c[headerEnd - 3] = '\\';
    c[headerEnd - 2] = '\n';
    c[headerEnd - 1] = ' ';
    assertThat(Npy.read(c, "cont-ok.npy").shape()).isEqualTo(Npy.read(fixture("c_f4.npy"), "c.npy").shape());
  }

  @Test
  void rejectsANulByteEvenInAComment() throws IOException {
    // Python will not read source text with a NUL in it, so numpy refuses the file; found by ParserFuzzTest
    byte[] b = fixture("c_f4.npy").clone();
    int headerEnd = 10 + ((b[8] & 0xff) | (b[9] & 0xff) << 8);
    b[headerEnd - 6] = '#';
    b[headerEnd - 4] = 0;
    assertThatThrownBy(() -> Npy.read(b, "nul.npy")).isInstanceOf(TensorFormatException.class)
        .hasMessageContaining("NUL byte");
    b[headerEnd - 4] = 'x';
    assertThat(Npy.read(b, "comment.npy").shape()).isEqualTo(new long[] {2, 3, 4, 5});
  }
}
