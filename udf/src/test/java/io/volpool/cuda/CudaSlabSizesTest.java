package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.op.Pipeline;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import org.junit.jupiter.api.Test;

/**
 * What a GPU slab run takes, without a GPU: the halo stays on the device, so pinned memory holds
 * only each slab's new planes (twice, one read ahead) and its output planes (twice), and device
 * memory has a second input window to copy the halo into.
 */
class CudaSlabSizesTest {
  private static final long MIB = 1L << 20;

  @Test
  void theReferenceVolumeStagesOnlyItsNewPlanes() {
    // [32,128,128,256] through avgpool k3 s2 p1: 4 MiB per input plane, 1 MiB per output plane
    SlabPlan plan = new SlabPlan(Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true)), new VolumeShape(32, 128, 128, 256));
    assertThat(plan.widestInput(0, 1)).as("a slab of one output plane reads a window of 3 input planes").isEqualTo(3);
    assertThat(plan.mostNewPlanes(1)).as("of which 2 are new (the first window has 2: padding)").isEqualTo(2);
    assertThat(CudaSlabRun.hostBytes(plan, 1)).as("2 x 2 new planes + 2 x 1 output plane").isEqualTo(18 * MIB);
    assertThat(CudaSlabRun.hostBytes(plan, 2)).isEqualTo((2 * 4 * 4 + 2 * 2) * MIB);
    assertThat(64 * MIB / CudaSlabRun.hostBytes(plan, 1)).as("runs a 64 MiB budget holds at once").isEqualTo(3);
    KernelPlan kp = KernelPlan.of(plan.pipeline(), plan.input());
    assertThat(CudaSlabRun.deviceSizes(kp, plan, 1)).as("input window, output planes, the second input window")
        .containsExactly(12 * MIB, MIB, 12 * MIB);
  }

  @Test
  void fewRunsAtOnceReadWithMoreThreads() {
    assertThat(CudaBackend.slabReadThreads(64 * MIB, 18 * MIB, 16)).as("3 runs on 16 cores").isEqualTo(5);
    assertThat(CudaBackend.slabReadThreads(64 * MIB, 26 * MIB, 16)).as("2 runs on 16 cores").isEqualTo(8);
    assertThat(CudaBackend.slabReadThreads(64 * MIB, 40 * MIB, 16)).as("1 run on 16 cores").isEqualTo(16);
    assertThat(CudaBackend.slabReadThreads(8L << 30, 18 * MIB, 16)).as("many runs: at least 4 each").isEqualTo(4);
    assertThat(CudaBackend.slabReadThreads(64 * MIB, 18 * MIB, 2)).as("2 cores").isEqualTo(4);
  }
}
