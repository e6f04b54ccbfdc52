package io.volpool.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.format.NpyArray;
import io.volpool.op.VolumeShape;
import io.volpool.testing.Golden;
import io.volpool.testing.Tolerance;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Every golden case through both CPU implementations. */
class CpuGoldenTest {
  private static final CpuBackend FAST = CpuBackend.fast(2);
  private static final CpuBackend REFERENCE = CpuBackend.reference();

  @AfterAll
  static void close() {
    FAST.close();
    REFERENCE.close();
  }

  static Stream<Arguments> cases() {
    return Golden.cases().stream().flatMap(c -> Stream.of(Arguments.of(c, "fast"), Arguments.of(c, "reference")));
  }

  @ParameterizedTest(name = "{0} on {1}")
  @MethodSource("cases")
  void matchesPyTorch(Golden.Case c, String impl) {
    CpuBackend b = impl.equals("fast") ? FAST : REFERENCE;
    NpyArray in = c.input();
    NpyArray exp = c.expected();
    VolumeShape vs = c.volumeShape();
    VolumeShape out = c.pipeline().outputShape(vs);
    long[] es = exp.shape();
    assertThat(new long[] {in.shape()[0], out.c(), out.d(), out.h(), out.w()}).as("output shape of " + c).containsExactly(es);
    float[] y = b.run(c.pipeline(), vs, in.toFloatArray(), c.batch());
    Tolerance.assertClose(y, exp.toFloatArray(), c + " on " + impl);
  }
}
