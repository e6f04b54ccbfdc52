package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.cpu.CpuBackend;
import io.volpool.cpu.SlabTest;
import io.volpool.format.NpyArray;
import io.volpool.memory.MemoryBudget;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.maxpool3d.MaxPool3dSpec;
import io.volpool.op.Pipeline;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import io.volpool.testing.Golden;
import io.volpool.testing.RandomData;
import io.volpool.testing.Tolerance;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Slabs on the GPU: every configuration and slab size of the CPU's {@link SlabTest}, run by the CUDA
 * kernels on windows of planes, gives the GPU's whole-volume result bit for bit and the CPU
 * reference within the golden tolerance; the golden cases in slabs of 2 planes; and the fast
 * kernels (the reference fused configuration, avgpool k3 s2 p1, the fused-then-avgpool kernel) at
 * odd and even slab starts. Outputs are poisoned with NaN first. Skipped without a GPU.
 */
class CudaSlabTest {
  private static final CpuBackend REF = CpuBackend.reference();

  @AfterAll
  static void close() {
    REF.close();
  }

  private static float[] whole(CudaBackend b, Pipeline p, VolumeShape in, float[] x) {
    return CudaGoldenTest.runOnGpu(b, p, in, x, 1, 1, 0);
  }

  static Stream<Arguments> cpuCases() {
    return SlabTest.cases().stream().map(Arguments::of);
  }

  /** The fast kernels, which the small CPU cases do not all reach (3 -> 16 channels, W a multiple of 4). */
  static Stream<Arguments> fastCases() {
    SplittableRandom r = new SplittableRandom(11);
    var ref = Golden.get("fused_seed").fused();
    AvgPool3dSpec k3 = new AvgPool3dSpec(3, 2, 1, false, true);
    return Stream.of(
        Arguments.of(new SlabTest.Case("fused taps2 s1 (reference)", Pipeline.of(ref), new VolumeShape(3, 9, 8, 12))),
        Arguments.of(new SlabTest.Case("fused taps2 steps (k1 s1 pool 2)", Pipeline.of(RandomData.fused(r, 3, 16, 1, 1, 0, 0, 2)),
            new VolumeShape(3, 10, 8, 10))),
        Arguments.of(new SlabTest.Case("avgpool k3s2p1 fast", Pipeline.of(k3), new VolumeShape(2, 13, 9, 68))),
        Arguments.of(new SlabTest.Case("avgpool k3s2p1 fast ceil exclude", Pipeline.of(new AvgPool3dSpec(3, 2, 1, true, false)),
            new VolumeShape(2, 12, 9, 12))),
        Arguments.of(new SlabTest.Case("fused then avgpool: one kernel", Pipeline.of(ref, k3), new VolumeShape(3, 14, 12, 16))),
        Arguments.of(new SlabTest.Case("fused then avgpool k3s3p1 ceil: one kernel", Pipeline.of(ref,
            new AvgPool3dSpec(3, 3, 1, true, false)), new VolumeShape(3, 13, 8, 12))),
        Arguments.of(new SlabTest.Case("fused then avgpool, W % 4 != 0: two kernels", Pipeline.of(ref, k3),
            new VolumeShape(3, 11, 6, 9))),
        Arguments.of(new SlabTest.Case("maxpool k3s2p1 fast", Pipeline.of(new MaxPool3dSpec(3, 2, 1, 1, false)),
            new VolumeShape(2, 13, 9, 68))),
        Arguments.of(new SlabTest.Case("maxpool k3s2p1 fast ceil", Pipeline.of(new MaxPool3dSpec(3, 2, 1, 1, true)),
            new VolumeShape(2, 12, 9, 12))),
        Arguments.of(new SlabTest.Case("fused then maxpool k3s2p1 fast", Pipeline.of(ref, new MaxPool3dSpec(3, 2, 1, 1, false)),
            new VolumeShape(3, 10, 8, 16))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource({"cpuCases", "fastCases"})
  void everySlabSizeGivesTheGpusWholeVolumeBitForBit(SlabTest.Case c) {
    CudaBackend b = Gpu.backend();
    float[] x = RandomData.uniform(new SplittableRandom(c.name().hashCode()), c.in().numel(), -2, 2);
    float[] whole = whole(b, c.pipeline(), c.in(), x);
    float[] cpu = REF.run(c.pipeline(), c.in(), x, 1);
    Tolerance.assertClose(whole, cpu, c + " whole on the GPU (" + KernelPlan.of(c.pipeline(), c.in()).describe() + ")");
    int od = c.pipeline().outputShape(c.in()).d();
    for (int planes = 1; planes <= od; planes++) {
      float[] y = SlabTest.slabbed(b, c.pipeline(), c.in(), x, planes);
      SlabTest.assertBitIdentical(y, whole, c + " in slabs of " + planes + " on the GPU ("
          + KernelPlan.of(c.pipeline(), c.in()).describe() + ")");
    }
  }

  static Stream<Arguments> goldenCases() {
    return Golden.cases().stream().filter(c -> !c.pipeline().stages().isEmpty()).map(Arguments::of);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("goldenCases")
  void goldenCasesInSlabsOfTwoPlanesMatchPyTorch(Golden.Case c) {
    CudaBackend b = Gpu.backend();
    NpyArray in = c.input();
    VolumeShape vs = c.volumeShape();
    VolumeShape out = c.pipeline().outputShape(vs);
    float[] x = in.toFloatArray();
    float[] exp = c.expected().toFloatArray();
    for (int v = 0; v < c.batch(); v++) {
      float[] one = Arrays.copyOfRange(x, (int) (v * vs.numel()), (int) ((v + 1) * vs.numel()));
      float[] y = SlabTest.slabbed(b, c.pipeline(), vs, one, 2);
      Tolerance.assertClose(y, Arrays.copyOfRange(exp, (int) (v * out.numel()), (int) ((v + 1) * out.numel())),
          c + " volume " + v + " in slabs of 2 planes on the GPU");
      SlabTest.assertBitIdentical(y, whole(b, c.pipeline(), vs, one), c + " volume " + v + " on the GPU");
    }
  }

  @Test
  void thePlanSlabsAVolumeLargerThanTheBudgetAndFitsItsBuffers() {
    CudaBackend b = Gpu.backend();
    Pipeline p = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));
    VolumeShape big = new VolumeShape(4, 64, 64, 128); // 8 MiB
    MemoryBudget budget = new MemoryBudget(4L << 20);
    var plan = b.plan(p, big, 0, 0, 0, 4, budget);
    assertThat(plan.slabbed()).as(plan.why()).isTrue();
    assertThat(b.slabBytes(new SlabPlan(p, big), plan.slabPlanes())).isLessThanOrEqualTo(budget.maxRequest());
    assertThat(b.slabBytes(new SlabPlan(p, big), plan.slabPlanes() + 1)).isGreaterThan(budget.maxRequest());
    var wholePlan = b.plan(p, big, 0, 0, 0, 4, new MemoryBudget(1L << 34));
    assertThat(wholePlan.slabbed()).as(wholePlan.why()).isFalse();
    // and the slabs it chose give the whole volume's bytes
    float[] x = RandomData.uniform(new SplittableRandom(5), big.numel(), -1, 1);
    SlabTest.assertBitIdentical(SlabTest.slabbed(b, p, big, x, plan.slabPlanes()), whole(b, p, big, x), "planned slabs");
  }

  @Test
  void slabRunsGiveTheirMemoryBack() {
    CudaBackend b = Gpu.backend();
    Pipeline p = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));
    VolumeShape s = new VolumeShape(2, 20, 16, 16);
    float[] x = RandomData.uniform(new SplittableRandom(3), s.numel(), -1, 1);
    List<Long> used = new ArrayList<>();
    MemoryBudget budget = new MemoryBudget(1L << 30);
    try (CudaBackend own = CudaBackend.create(0.2, budget)) {
      for (int i = 0; i < 3; i++) {
        SlabTest.slabbed(own, p, s, x, 3);
        used.add(budget.used());
      }
    } catch (CudaUnavailableException e) {
      throw new AssertionError(e);
    }
    assertThat(budget.used()).as("all given back once the backend closes").isZero();
    assertThat(used).as("pinned blocks are reused, not leaked, from run to run: " + used).allMatch(u -> u.equals(used.get(0)));
    assertThat(b).isNotNull();
  }
}
