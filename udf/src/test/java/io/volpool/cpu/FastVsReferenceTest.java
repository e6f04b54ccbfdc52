package io.volpool.cpu;

import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.fused.FusedOp;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.testing.RandomData;
import io.volpool.testing.Tolerance;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fast CPU kernels against the float64 reference on fresh random inputs and weights, over
 * awkward sizes (1x1x1, odd, primes) and parameters (every stride/padding/output_padding mix).
 */
class FastVsReferenceTest {
  private static final CpuBackend FAST = CpuBackend.fast(2);
  private static final CpuBackend REFERENCE = CpuBackend.reference();

  @AfterAll
  static void close() {
    FAST.close();
    REFERENCE.close();
  }

  static Stream<Arguments> fusedCases() {
    return Stream.of(
        Arguments.of(3, 16, 3, 2, 1, 0, 2, new VolumeShape(3, 16, 32, 32), 2),
        Arguments.of(3, 16, 3, 2, 1, 0, 2, new VolumeShape(3, 2, 2, 2), 3),
        Arguments.of(1, 1, 1, 1, 0, 0, 1, new VolumeShape(1, 1, 1, 1), 1),
        Arguments.of(2, 3, 3, 1, 0, 0, 3, new VolumeShape(2, 5, 7, 3), 2),
        Arguments.of(4, 5, 4, 2, 1, 1, 2, new VolumeShape(4, 3, 5, 7), 1),
        Arguments.of(2, 4, 5, 3, 2, 2, 2, new VolumeShape(2, 4, 5, 6), 2),
        Arguments.of(3, 2, 2, 3, 0, 0, 2, new VolumeShape(3, 13, 1, 4), 1),
        Arguments.of(1, 7, 3, 2, 3, 1, 1, new VolumeShape(1, 9, 11, 13), 1),
        Arguments.of(5, 3, 3, 2, 0, 1, 4, new VolumeShape(5, 4, 6, 5), 2));
  }

  @ParameterizedTest(name = "fused {0}->{1} k{2} s{3} p{4} op{5} pool{6} on {7} x{8}")
  @MethodSource("fusedCases")
  void fusedAgrees(int cin, int cout, int k, int s, int p, int op, int pool, VolumeShape in, int n) {
    SplittableRandom r = new SplittableRandom(in.numel() * 31 + k * 7 + s);
    FusedOp f = RandomData.fused(r, cin, cout, k, s, p, op, pool);
    float[] x = RandomData.uniform(r, n * in.numel(), -2, 2);
    Pipeline pl = Pipeline.of(f);
    Tolerance.assertClose(FAST.run(pl, in, x, n), REFERENCE.run(pl, in, x, n), "fused on " + in);
  }

  static Stream<Arguments> poolCases() {
    return Stream.of(
        Arguments.of(3, 2, 1, false, true, new VolumeShape(2, 16, 16, 32), 2),
        Arguments.of(1, 1, 0, false, true, new VolumeShape(1, 1, 1, 1), 1),
        Arguments.of(3, 2, 1, true, false, new VolumeShape(1, 4, 13, 1), 2),
        Arguments.of(2, 3, 1, true, true, new VolumeShape(3, 7, 8, 9), 1),
        Arguments.of(4, 1, 2, false, false, new VolumeShape(2, 5, 6, 7), 1),
        Arguments.of(5, 4, 2, true, true, new VolumeShape(1, 17, 3, 11), 2),
        Arguments.of(3, 2, 0, true, false, new VolumeShape(2, 4, 4, 4098 / 2), 1));
  }

  @ParameterizedTest(name = "avgpool k{0} s{1} p{2} ceil={3} countPad={4} on {5} x{6}")
  @MethodSource("poolCases")
  void avgPoolAgrees(int k, int s, int p, boolean ceil, boolean countPad, VolumeShape in, int n) {
    SplittableRandom r = new SplittableRandom(in.numel() + k);
    float[] x = RandomData.uniform(r, n * in.numel(), -3, 3);
    Pipeline pl = Pipeline.of(new AvgPool3dSpec(k, s, p, ceil, countPad));
    Tolerance.assertClose(FAST.run(pl, in, x, n), REFERENCE.run(pl, in, x, n), "avgpool on " + in);
  }

  @ParameterizedTest(name = "extreme fill {0}")
  @MethodSource("fills")
  void extremeFills(float v) {
    VolumeShape in = new VolumeShape(3, 5, 6, 7);
    SplittableRandom r = new SplittableRandom(1);
    float[] x = new float[(int) in.numel()];
    java.util.Arrays.fill(x, v);
    Pipeline pl = Pipeline.of(RandomData.fused(r, 3, 16, 3, 2, 1, 0, 2), new AvgPool3dSpec(3, 2, 1, false, true));
    Tolerance.assertClose(FAST.run(pl, in, x, 1), REFERENCE.run(pl, in, x, 1), "fill " + v);
  }

  static Stream<Float> fills() {
    return Stream.of(0f, 1f, -1f, 1e6f, -1e-6f);
  }
}
