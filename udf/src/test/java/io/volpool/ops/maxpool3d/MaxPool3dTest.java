package io.volpool.ops.maxpool3d;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.conf.SettingsException;
import io.volpool.op.OperatorInputs;
import io.volpool.op.Parallel;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;
import io.volpool.testing.RandomData;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * MaxPool3d as a unit: PyTorch's shape rules and checks, the fast separable kernel against the
 * reference loops bit for bit (a max is exact) over awkward sizes and every parameter, NaN and
 * infinities, and its settings. Golden cases (from PyTorch) run through every backend in the shared
 * golden tests; the GPU kernels in CudaVsCpuTest and CudaSlabTest.
 */
class MaxPool3dTest {
  private static final ForkJoinPool POOL = new ForkJoinPool(3);
  private static final Parallel PAR = (units, body) -> POOL.submit(() -> IntStream.range(0, units).parallel()
      .forEach(body)).join();

  @ParameterizedTest(name = "k{0} s{1} p{2} d{3} ceil={4} on {5}x{6}x{7}")
  @CsvSource({
      "3, 2, 1, 1, false, 16, 32, 32",
      "3, 2, 1, 1, true, 7, 9, 11",
      "2, 2, 0, 1, false, 8, 8, 9",
      "3, 1, 1, 2, false, 11, 10, 13",
      "2, 3, 1, 2, true, 12, 9, 10",
      "4, 3, 2, 1, true, 10, 11, 12",
      "1, 1, 0, 1, false, 1, 1, 1",
      "5, 2, 2, 1, true, 5, 4, 3",
      "3, 3, 1, 3, true, 13, 7, 19"})
  void fastMatchesReferenceBitForBit(int k, int s, int p, int d, boolean ceil, int dd, int hh, int ww) {
    MaxPool3dSpec sp = new MaxPool3dSpec(k, s, p, d, ceil);
    VolumeShape in = new VolumeShape(2, dd, hh, ww);
    VolumeShape out = sp.outputShape(in);
    float[] x = RandomData.uniform(new SplittableRandom(k * 31 + s * 7 + dd), 3 * in.numel(), -5, 5);
    float[] fast = new float[(int) (3 * out.numel())];
    float[] ref = new float[fast.length];
    java.util.Arrays.fill(fast, Float.NaN);
    sp.runCpu(PAR, in, Slab.whole(in, out), x, 3, fast);
    sp.runReference(in, Slab.whole(in, out), x, 3, ref);
    assertThat(fast).containsExactly(ref);
    // each output is one of its window's inputs: a max, not an average
    assertThat(x).contains(fast[0], fast[fast.length - 1]);
  }

  @Test
  void nanWinsAndPaddingNeverDoes() {
    VolumeShape in = new VolumeShape(1, 3, 3, 3);
    MaxPool3dSpec sp = new MaxPool3dSpec(3, 3, 1, 1, false);
    float[] x = new float[27];
    java.util.Arrays.fill(x, Float.NEGATIVE_INFINITY);
    float[] y = new float[1];
    sp.runCpu(Parallel.SERIAL, in, Slab.whole(in, sp.outputShape(in)), x, 1, y);
    assertThat(y[0]).as("all -inf: padding (not 0) never wins").isEqualTo(Float.NEGATIVE_INFINITY);
    x[13] = Float.NaN;
    x[14] = Float.POSITIVE_INFINITY;
    sp.runCpu(Parallel.SERIAL, in, Slab.whole(in, sp.outputShape(in)), x, 1, y);
    assertThat(y[0]).as("NaN beats +inf, as in PyTorch").isNaN();
    sp.runReference(in, Slab.whole(in, sp.outputShape(in)), x, 1, y);
    assertThat(y[0]).isNaN();
  }

  @Test
  void shapesAndChecksAreTorchs() {
    // PyTorch's shape for golden case maxpool_dilation2_ceil: MaxPool3d(2, 3, 1, dilation=2, ceil_mode=True)
    assertThat(new MaxPool3dSpec(2, 3, 1, 2, true).outputShape(new VolumeShape(1, 12, 9, 10)))
        .isEqualTo(new VolumeShape(1, 5, 4, 4));
    assertThat(MaxPool3dSpec.of(2).stride()).as("stride defaults to the kernel").isEqualTo(2);
    assertThatThrownBy(() -> new MaxPool3dSpec(3, 2, 2, 1, false))
        .hasMessage("maxpool3d: padding should be at most half of kernel_size (as in PyTorch), got padding=2 and kernel_size=3");
    assertThatThrownBy(() -> new MaxPool3dSpec(3, 2, 1, 0, false)).hasMessage("maxpool3d: dilation must be positive, got 0");
    assertThatThrownBy(() -> new MaxPool3dSpec(3, 1, 0, 3, false).outputShape(new VolumeShape(1, 6, 9, 9)))
        .hasMessageContaining("maxpool3d: input [1, 6, 9, 9] is too small for kernel_size=3, stride=1, padding=0, dilation=3");
    assertThat(new MaxPool3dSpec(3, 2, 1, 2, false).inputPlanes(new VolumeShape(1, 20, 4, 4), 3, 5))
        .as("outputs 3..4 read planes 5, 7, 9 and 7, 9, 11").containsExactly(5, 12);
  }

  @Test
  void settingsFollowPyTorchsDefaults() {
    MaxPool3dSpec sp = (MaxPool3dSpec) MaxPool3d.OPERATOR.fromSettings(inputs(Map.of(
        "spark.volpool.maxpool3d.kernelSize", "4")));
    assertThat(sp).isEqualTo(new MaxPool3dSpec(4, 4, 0, 1, false));
    assertThat(MaxPool3d.OPERATOR.fromSettings(inputs(Map.of("spark.volpool.maxpool3d.kernelSize", "3",
        "spark.volpool.maxpool3d.stride", "2", "spark.volpool.maxpool3d.padding", "1", "spark.volpool.maxpool3d.dilation",
        "2", "spark.volpool.maxpool3d.ceilMode", "true")))).isEqualTo(new MaxPool3dSpec(3, 2, 1, 2, true));
    assertThatThrownBy(() -> MaxPool3d.OPERATOR.fromSettings(inputs(Map.of())))
        .isInstanceOf(SettingsException.class)
        .hasMessageStartingWith("missing setting spark.volpool.maxpool3d.kernelSize: the pipeline has maxpool3d");
    assertThatThrownBy(() -> MaxPool3d.OPERATOR.fromSettings(inputs(Map.of("spark.volpool.maxpool3d.kernelSize", "2",
        "spark.volpool.maxpool3d.padding", "2"))))
        .isInstanceOf(SettingsException.class).hasMessageContaining("spark.volpool.maxpool3d.*: maxpool3d: padding should be");
  }

  private static OperatorInputs inputs(Map<String, String> values) {
    return new OperatorInputs() {
      @Override
      public Map<String, String> values() {
        return values;
      }

      @Override
      public byte[] readFile(io.volpool.conf.ConfKey<String> key, String role, String why, HeadCheck check) {
        throw new AssertionError("maxpool3d reads no file");
      }
    };
  }
}
