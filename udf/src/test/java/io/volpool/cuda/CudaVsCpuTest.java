package io.volpool.cuda;

import io.volpool.cpu.CpuBackend;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.maxpool3d.MaxPool3dSpec;
import io.volpool.ops.fused.FusedOp;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.testing.Golden;
import io.volpool.testing.RandomData;
import io.volpool.testing.Tolerance;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * GPU against the CPU reference on fresh random inputs of awkward sizes (1x1x1, odd, not multiples
 * of the block size), through every kernel (fast paths and generic), batches split over both slots.
 * Skipped without a GPU.
 */
class CudaVsCpuTest {
  private static final CpuBackend REF = CpuBackend.reference();

  @AfterAll
  static void close() {
    REF.close();
  }

  static Stream<Arguments> cases() {
    FusedOp ref = Golden.get("fused_seed").fused();
    SplittableRandom r = new SplittableRandom(7);
    FusedOp odd = RandomData.fused(r, 2, 5, 3, 2, 1, 0, 2);
    FusedOp big = RandomData.fused(r, 4, 3, 4, 2, 1, 1, 3);
    FusedOp ref2 = RandomData.fused(r, 3, 16, 3, 2, 1, 0, 2);
    AvgPool3dSpec k3 = new AvgPool3dSpec(3, 2, 1, false, true);
    MaxPool3dSpec mk3 = new MaxPool3dSpec(3, 2, 1, 1, false);
    return Stream.of(
        Arguments.of("fused fast, tiny", Pipeline.of(ref), new VolumeShape(3, 2, 2, 2), 5, 2),
        Arguments.of("fused fast, odd", Pipeline.of(ref2), new VolumeShape(3, 5, 7, 33), 3, 2),
        Arguments.of("fused fast, reference", Pipeline.of(ref2), new VolumeShape(3, 16, 32, 32), 9, 4),
        Arguments.of("fused fast, several tiles", Pipeline.of(ref2), new VolumeShape(3, 4, 20, 70), 2, 2),
        Arguments.of("fused fast, steps of 2 (k1 s1 pool 2)", Pipeline.of(RandomData.fused(r, 3, 16, 1, 1, 0, 0, 2)),
            new VolumeShape(3, 6, 8, 10), 3, 2),
        Arguments.of("fused fast, mixed steps (k1 s1 p3 pool 2)", Pipeline.of(RandomData.fused(r, 3, 16, 1, 1, 3, 0, 2)),
            new VolumeShape(3, 9, 10, 11), 2, 1),
        Arguments.of("fused fast, k2 s2 p1 pool 2", Pipeline.of(RandomData.fused(r, 3, 16, 2, 2, 1, 1, 2)),
            new VolumeShape(3, 5, 6, 7), 3, 2),
        Arguments.of("fused generic 1x1x1", Pipeline.of(RandomData.fused(r, 1, 1, 1, 1, 0, 0, 1)),
            new VolumeShape(1, 1, 1, 1), 3, 2),
        Arguments.of("fused generic odd", Pipeline.of(odd), new VolumeShape(2, 5, 7, 9), 7, 3),
        Arguments.of("fused generic op1 pool3", Pipeline.of(big), new VolumeShape(4, 5, 6, 7), 2, 1),
        Arguments.of("avgpool fast", Pipeline.of(k3), new VolumeShape(3, 9, 11, 68), 5, 2),
        Arguments.of("avgpool fast, wide", Pipeline.of(k3), new VolumeShape(2, 6, 7, 260), 2, 1),
        Arguments.of("avgpool fast ceil exclude", Pipeline.of(new AvgPool3dSpec(3, 2, 1, true, false)),
            new VolumeShape(2, 8, 9, 12), 3, 2),
        Arguments.of("avgpool fast 1x1x4", Pipeline.of(k3), new VolumeShape(1, 1, 1, 4), 4, 3),
        Arguments.of("avgpool generic W%4=2", Pipeline.of(k3), new VolumeShape(1, 3, 5, 6), 2, 2),
        Arguments.of("avgpool fast odd rows, several tiles", Pipeline.of(k3), new VolumeShape(2, 5, 13, 132), 3, 2),
        Arguments.of("avgpool generic odd W", Pipeline.of(k3), new VolumeShape(3, 7, 9, 11), 3, 2),
        Arguments.of("avgpool generic k5s3p2 ceil", Pipeline.of(new AvgPool3dSpec(5, 3, 2, true, false)),
            new VolumeShape(2, 9, 10, 13), 2, 1),
        Arguments.of("avgpool generic k1", Pipeline.of(new AvgPool3dSpec(1, 1, 0, false, true)),
            new VolumeShape(1, 1, 1, 1), 3, 2),
        Arguments.of("pipeline fused kernel", Pipeline.of(ref2, k3), new VolumeShape(3, 16, 32, 32), 6, 4),
        Arguments.of("pipeline fused kernel odd", Pipeline.of(ref2, k3), new VolumeShape(3, 3, 7, 12), 5, 2),
        Arguments.of("pipeline, W not a multiple of 4: two kernels", Pipeline.of(ref2, k3), new VolumeShape(3, 3, 6, 9), 3, 2),
        Arguments.of("pipeline fused kernel 1x1x4", Pipeline.of(ref2, k3), new VolumeShape(3, 2, 2, 4), 3, 2),
        Arguments.of("pipeline fused kernel, wide tiles", Pipeline.of(ref2, k3), new VolumeShape(3, 9, 40, 72), 3, 2),
        Arguments.of("pipeline fused kernel k2s1p0", Pipeline.of(ref2, new AvgPool3dSpec(2, 1, 0, false, true)),
            new VolumeShape(3, 4, 5, 8), 3, 2),
        Arguments.of("pipeline fused kernel k3s3p1 ceil exclude", Pipeline.of(ref2, new AvgPool3dSpec(3, 3, 1, true, false)),
            new VolumeShape(3, 7, 8, 12), 3, 2),
        Arguments.of("pipeline two kernels", Pipeline.of(odd, k3), new VolumeShape(2, 6, 7, 8), 3, 2),
        Arguments.of("maxpool fast", Pipeline.of(mk3), new VolumeShape(3, 9, 11, 68), 5, 2),
        Arguments.of("maxpool fast ceil, even sizes", Pipeline.of(new MaxPool3dSpec(3, 2, 1, 1, true)),
            new VolumeShape(2, 8, 10, 12), 3, 2),
        Arguments.of("maxpool fast 1x1x4", Pipeline.of(mk3), new VolumeShape(1, 1, 1, 4), 4, 3),
        Arguments.of("maxpool fast, wide, several tiles", Pipeline.of(mk3), new VolumeShape(2, 5, 13, 260), 2, 1),
        Arguments.of("maxpool generic odd W", Pipeline.of(mk3), new VolumeShape(3, 7, 9, 11), 3, 2),
        Arguments.of("maxpool generic dilation 2 ceil", Pipeline.of(new MaxPool3dSpec(3, 1, 1, 2, true)),
            new VolumeShape(2, 9, 10, 13), 2, 1),
        Arguments.of("maxpool generic k2 default stride", Pipeline.of(MaxPool3dSpec.of(2)), new VolumeShape(1, 6, 7, 9), 3, 2),
        Arguments.of("fused then maxpool", Pipeline.of(ref2, mk3), new VolumeShape(3, 6, 8, 16), 3, 2),
        Arguments.of("identity", Pipeline.of(), new VolumeShape(2, 3, 4, 5), 5, 2));
  }

  @ParameterizedTest(name = "{0}: {2} x{3}, batch {4}")
  @MethodSource("cases")
  void gpuMatchesCpu(String name, Pipeline p, VolumeShape in, int n, int batch) {
    CudaBackend b = Gpu.backend();
    SplittableRandom r = new SplittableRandom(in.numel() * 13 + n);
    float[] x = RandomData.uniform(r, n * in.numel(), -2, 2);
    float[] gpu = CudaGoldenTest.runOnGpu(b, p, in, x, n, batch, batch % 2 == 0 ? 4 : 0);
    float[] cpu = REF.run(p, in, x, n);
    Tolerance.assertClose(gpu, cpu, name + " (" + KernelPlan.of(p, in).describe() + ")");
  }
}
