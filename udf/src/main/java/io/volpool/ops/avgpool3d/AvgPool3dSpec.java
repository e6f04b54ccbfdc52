package io.volpool.ops.avgpool3d;

import io.volpool.op.GpuStep;
import io.volpool.op.Parallel;
import io.volpool.op.PoolStage;
import io.volpool.op.PoolMath;
import io.volpool.op.Slab;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.util.List;

/**
 * {@code torch.nn.AvgPool3d(kernel_size, stride, padding, ceil_mode, count_include_pad)} with the
 * same value for every spatial dimension. With {@code countIncludePad} the divisor counts padded
 * cells (but not cells a ceil-mode window reaches past the padding); without it only input cells.
 */
public record AvgPool3dSpec(int kernel, int stride, int padding, boolean ceilMode, boolean countIncludePad)
    implements PoolStage {
  public static final String NAME = "avgpool3d";

  public AvgPool3dSpec {
    PoolMath.check(NAME, kernel, stride, padding, 1);
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public int dilation() {
    return 1;
  }

  @Override
  public boolean max() {
    return false;
  }

  @Override
  public String describe() {
    return String.format("avgpool3d(kernel=%d, stride=%d, padding=%d, ceil_mode=%s, count_include_pad=%s)", kernel, stride,
        padding, ceilMode, countIncludePad);
  }

  @Override
  public VolumeShape outputShape(VolumeShape in) {
    return PoolMath.poolShape(NAME, in, kernel, stride, padding, 1, ceilMode);
  }

  @Override
  public int[] inputPlanes(VolumeShape in, int o0, int o1) {
    // output o averages input planes [o*s - p, o*s - p + k) clipped to the volume
    return new int[] {Math.max(0, o0 * stride - padding), Math.min(in.d(), (o1 - 1) * stride - padding + kernel)};
  }

  @Override
  public void runCpu(Parallel par, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    AvgPool3dCpu.fast(this, par, in, slab, x, n, y);
  }

  @Override
  public void runReference(VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    AvgPool3dCpu.reference(this, in, slab, x, n, y);
  }

  @Override
  public GpuStep gpu(List<Stage> stages, List<VolumeShape> shapes, int i, boolean fuseStages) {
    return AvgPool3dGpu.step(this, i, shapes.get(i), shapes.get(i + 1));
  }
}
