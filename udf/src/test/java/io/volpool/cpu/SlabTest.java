package io.volpool.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.format.NpyArray;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.maxpool3d.MaxPool3dSpec;
import io.volpool.op.Pipeline;
import io.volpool.op.SlabPlan;
import io.volpool.op.Stage;
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
 * Slabs along D give the whole-volume result bit for bit, on both CPU implementations, at every
 * awkward boundary: halos wider than a slab, a short last slab, padding at both ends, ceil_mode,
 * strides 1 and 3 (where some planes are read by no output), the fused op with output_padding, and
 * fused then avgpool3d (whose halo is the two windows composed).
 */
public class SlabTest {
  private static final CpuBackend FAST = CpuBackend.fast(2);
  private static final CpuBackend REFERENCE = CpuBackend.reference();

  @AfterAll
  static void close() {
    FAST.close();
    REFERENCE.close();
  }

  /** An in-memory volume read forward, checking the engine keeps to the forward-only contract. */
  public static final class ArraySource implements PlaneSource {
    final VolumeShape shape;
    final float[] x;
    int next;
    long planesRead;

    ArraySource(VolumeShape shape, float[] x) {
      this.shape = shape;
      this.x = x;
    }

    @Override
    public String record() {
      return "test";
    }

    @Override
    public VolumeShape shape() {
      return shape;
    }

    @Override
    public void read(int d0, int d1, java.nio.FloatBuffer dst, int at, int channelStride) {
      assertThat(d0).as("reads go forward").isGreaterThanOrEqualTo(next);
      assertThat(d1).isGreaterThan(d0).isLessThanOrEqualTo(shape.d());
      int hw = shape.h() * shape.w();
      for (int c = 0; c < shape.c(); c++) {
        dst.put(c * channelStride + at, x, (int) (c * shape.plane() + (long) d0 * hw), (d1 - d0) * hw);
      }
      next = d1;
      planesRead += d1 - d0;
    }

    @Override
    public void close() {}
  }

  /** Runs {@code p} over {@code x} in slabs of {@code planes} output planes on {@code b} and assembles the output. */
  public static float[] slabbed(io.volpool.backend.Backend b, Pipeline p, VolumeShape in, float[] x, int planes) {
    SlabPlan plan = new SlabPlan(p, in);
    VolumeShape out = plan.output();
    float[] y = new float[(int) out.numel()];
    Arrays.fill(y, Float.NaN); // poison: a plane no slab writes shows
    int[] expectNext = {0};
    int ohw = out.h() * out.w();
    ArraySource src = new ArraySource(in, x);
    try (io.volpool.backend.SlabRun run = b.startSlabs(plan, planes, src, (o0, o1, part) -> {
      assertThat(o0).as("slabs arrive in order").isEqualTo(expectNext[0]);
      expectNext[0] = o1;
      for (int c = 0; c < out.c(); c++) {
        part.get(c * (o1 - o0) * ohw, y, (int) (c * out.plane() + (long) o0 * ohw), (o1 - o0) * ohw);
      }
    }, new PhaseTimes(), 0)) {
      while (run.step()) {
        // one slab per step
      }
    }
    assertThat(expectNext[0]).as("every output plane").isEqualTo(out.d());
    assertThat(src.planesRead).as("no input plane is read twice").isLessThanOrEqualTo(in.d());
    return y;
  }

  public static void assertBitIdentical(float[] got, float[] want, String what) {
    assertThat(got.length).isEqualTo(want.length);
    for (int i = 0; i < want.length; i++) {
      if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(want[i])) {
        throw new AssertionError(what + ": element " + i + " is " + got[i] + " slabbed but " + want[i] + " whole");
      }
    }
  }

  public record Case(String name, Pipeline pipeline, VolumeShape in) {
    @Override
    public String toString() {
      return name;
    }
  }

  public static List<Case> cases() {
    SplittableRandom r = new SplittableRandom(9);
    List<Case> cs = new ArrayList<>();
    cs.add(new Case("avgpool k3 s2 p1 (reference config)", Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true)),
        new VolumeShape(2, 17, 6, 7)));
    cs.add(new Case("avgpool k5 s1 p2: halo of 4 planes", Pipeline.of(new AvgPool3dSpec(5, 1, 2, false, true)),
        new VolumeShape(2, 11, 5, 5)));
    cs.add(new Case("avgpool k3 s3 p0: planes no output reads", Pipeline.of(new AvgPool3dSpec(3, 3, 0, false, true)),
        new VolumeShape(1, 14, 6, 6)));
    cs.add(new Case("avgpool k1 s3: gaps between windows", Pipeline.of(new AvgPool3dSpec(1, 3, 0, false, true)),
        new VolumeShape(2, 13, 4, 4)));
    cs.add(new Case("avgpool k3 s2 p1 ceil, no pad count", Pipeline.of(new AvgPool3dSpec(3, 2, 1, true, false)),
        new VolumeShape(3, 10, 7, 5)));
    cs.add(new Case("avgpool k4 s3 p2 ceil", Pipeline.of(new AvgPool3dSpec(4, 3, 2, true, true)), new VolumeShape(2, 16, 8, 9)));
    cs.add(new Case("fused 3->4 k3 s2 p1 pool2", Pipeline.of(RandomData.fused(r, 3, 4, 3, 2, 1, 0, 2)),
        new VolumeShape(3, 9, 5, 6)));
    cs.add(new Case("fused 2->3 k3 s2 p1 output_padding 1 pool3", Pipeline.of(RandomData.fused(r, 2, 3, 3, 2, 1, 1, 3)),
        new VolumeShape(2, 8, 4, 5)));
    cs.add(new Case("fused 2->2 k4 s3 p2 output_padding 2 pool2", Pipeline.of(RandomData.fused(r, 2, 2, 4, 3, 2, 2, 2)),
        new VolumeShape(2, 7, 4, 4)));
    cs.add(new Case("fused k3 s1 p0 pool2", Pipeline.of(RandomData.fused(r, 1, 2, 3, 1, 0, 0, 2)), new VolumeShape(1, 10, 5, 4)));
    cs.add(new Case("fused then avgpool k3 s2 p1: composed halo", Pipeline.of(RandomData.fused(r, 3, 4, 3, 2, 1, 0, 2),
        new AvgPool3dSpec(3, 2, 1, false, true)), new VolumeShape(3, 12, 6, 6)));
    cs.add(new Case("avgpool then avgpool ceil", Pipeline.of(new AvgPool3dSpec(2, 1, 1, false, false),
        new AvgPool3dSpec(3, 2, 1, true, true)), new VolumeShape(2, 15, 5, 5)));
    cs.add(new Case("maxpool k3 s2 p1", Pipeline.of(new MaxPool3dSpec(3, 2, 1, 1, false)), new VolumeShape(2, 17, 6, 8)));
    cs.add(new Case("maxpool k3 s1 p1 dilation 2 ceil: a wide halo", Pipeline.of(new MaxPool3dSpec(3, 1, 1, 2, true)),
        new VolumeShape(2, 14, 7, 6)));
    cs.add(new Case("maxpool k2 s3 p1 dilation 2 ceil: gaps", Pipeline.of(new MaxPool3dSpec(2, 3, 1, 2, true)),
        new VolumeShape(1, 16, 6, 7)));
    cs.add(new Case("fused then maxpool k3 s2 p1 ceil", Pipeline.of(RandomData.fused(r, 3, 4, 3, 2, 1, 0, 2),
        new MaxPool3dSpec(3, 2, 1, 1, true)), new VolumeShape(3, 11, 6, 6)));
    cs.add(new Case("maxpool then avgpool", Pipeline.of(new MaxPool3dSpec(2, 1, 0, 1, false),
        new AvgPool3dSpec(3, 2, 1, false, true)), new VolumeShape(2, 13, 5, 5)));
    return cs;
  }

  static Stream<Arguments> casesOnBoth() {
    return cases().stream().flatMap(c -> Stream.of(Arguments.of(c, "fast"), Arguments.of(c, "reference")));
  }

  @ParameterizedTest(name = "{0} on {1}")
  @MethodSource("casesOnBoth")
  void everySlabSizeGivesTheWholeVolumeBitForBit(Case c, String impl) {
    CpuBackend b = impl.equals("fast") ? FAST : REFERENCE;
    float[] x = RandomData.uniform(new SplittableRandom(c.name().hashCode()), c.in().numel(), -2, 2);
    float[] whole = b.run(c.pipeline(), c.in(), x, 1);
    int od = c.pipeline().outputShape(c.in()).d();
    for (int planes = 1; planes <= od; planes++) {
      assertBitIdentical(slabbed(b, c.pipeline(), c.in(), x, planes), whole, c + " in slabs of " + planes + " on " + impl);
    }
  }

  @Test
  void theHaloIsWhatTheStagesRead() {
    // avgpool k3 s2 p1 over D=17: output plane o reads [2o-1, 2o+2) clipped
    SlabPlan a = new SlabPlan(Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true)), new VolumeShape(1, 17, 4, 4));
    assertThat(a.inputPlanes(0, 1)).containsExactly(0, 2);
    assertThat(a.inputPlanes(3, 5)).containsExactly(5, 10);
    assertThat(a.inputPlanes(8, 9)).containsExactly(15, 17);
    // composed with a stride-1 k3 pool in front, each side widens by one more plane
    SlabPlan two = new SlabPlan(Pipeline.of(new AvgPool3dSpec(3, 1, 1, false, true), new AvgPool3dSpec(3, 2, 1, false, true)),
        new VolumeShape(1, 17, 4, 4));
    assertThat(two.inputPlanes(3, 5)).containsExactly(4, 11);
    assertThat(FAST.slabPlanes(a, Long.MAX_VALUE, 0)).isEqualTo(9);
    assertThat(FAST.slabPlanes(a, 0, 0)).as("not even one plane fits").isZero();
    assertThat(FAST.slabPlanes(a, FAST.slabBytes(a, 4), 0)).isEqualTo(4);
    assertThat(FAST.slabPlanes(a, FAST.slabBytes(a, 4) - 1, 0)).isEqualTo(3);
  }

  @Test
  void slabsAimAtSixtyFourMibWhateverRoomTheBudgetLeaves() {
    // the 321 MiB int16 volume of the budget benchmark: any budget above the aim gives the aim's slabs
    SlabPlan big = new SlabPlan(Pipeline.of(new AvgPool3dSpec(2, 2, 0, false, true)), new VolumeShape(1, 642, 512, 512));
    int planes = FAST.slabPlanes(big, 2L << 30, 0);
    assertThat(FAST.slabBytes(big, planes)).isLessThanOrEqualTo(CpuBackend.SLAB_BYTES);
    assertThat(FAST.slabBytes(big, planes + 1)).isGreaterThan(CpuBackend.SLAB_BYTES);
    assertThat(FAST.slabPlanes(big, 8L << 30, 0)).as("a larger budget, the same slabs").isEqualTo(planes);
    // below the aim the budget decides, as before
    assertThat(FAST.slabPlanes(big, FAST.slabBytes(big, 2), 0)).isEqualTo(2);
    // a plane larger than the aim still runs when the budget holds it
    SlabPlan wide = new SlabPlan(Pipeline.of(new AvgPool3dSpec(2, 2, 0, false, true)), new VolumeShape(16, 8, 1024, 1024));
    assertThat(FAST.slabBytes(wide, 1)).isGreaterThan(CpuBackend.SLAB_BYTES);
    assertThat(FAST.slabPlanes(wide, FAST.slabBytes(wide, 1), 0)).isEqualTo(1);
  }

  @Test
  void aSlabMissingAPlaneItsOutputReadsIsRefused() {
    AvgPool3dSpec sp = new AvgPool3dSpec(3, 2, 1, false, true);
    VolumeShape in = new VolumeShape(1, 9, 4, 4);
    float[] x = new float[(int) in.numel()];
    // output planes [2, 4) read input planes [3, 8); give the kernel [4, 8) only
    assertThatThrownBy(() -> sp.runCpu(io.volpool.op.Parallel.SERIAL, in, new io.volpool.op.Slab(4, 4, 2, 2), x, 1,
        new float[64]))
        .hasMessageContaining("outside the slab");
  }

  static Stream<Arguments> goldenCases() {
    return Golden.cases().stream().filter(c -> !c.pipeline().stages().isEmpty()).map(Arguments::of);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("goldenCases")
  void goldenCasesInSlabsOfTwoPlanesMatchPyTorch(Golden.Case c) {
    NpyArray in = c.input();
    VolumeShape vs = c.volumeShape();
    VolumeShape out = c.pipeline().outputShape(vs);
    float[] x = in.toFloatArray();
    float[] exp = c.expected().toFloatArray();
    for (int b = 0; b < c.batch(); b++) {
      float[] one = Arrays.copyOfRange(x, (int) (b * vs.numel()), (int) ((b + 1) * vs.numel()));
      float[] y = slabbed(FAST, c.pipeline(), vs, one, 2);
      Tolerance.assertClose(y, Arrays.copyOfRange(exp, (int) (b * out.numel()), (int) ((b + 1) * out.numel())),
          c + " volume " + b + " in slabs of 2 planes");
      assertBitIdentical(y, Arrays.copyOfRange(FAST.run(c.pipeline(), vs, x, c.batch()), (int) (b * out.numel()),
          (int) ((b + 1) * out.numel())), c + " volume " + b);
    }
  }

  @Test
  void stagesReportTheirPlanes() {
    Stage s = new AvgPool3dSpec(2, 2, 0, false, true);
    assertThat(s.inputPlanes(new VolumeShape(1, 8, 2, 2), 1, 3)).containsExactly(2, 6);
  }
}
