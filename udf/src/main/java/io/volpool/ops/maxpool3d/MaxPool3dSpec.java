package io.volpool.ops.maxpool3d;

import io.volpool.op.GpuStep;
import io.volpool.op.Parallel;
import io.volpool.op.PoolStage;
import io.volpool.op.PoolMath;
import io.volpool.op.Slab;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.util.List;

/**
 * {@code torch.nn.MaxPool3d(kernel_size, stride, padding, dilation, ceil_mode)} with the same value
 * for every spatial dimension: the largest of the window's {@code kernel^3} cells, {@code dilation}
 * apart. Padded cells never win (a window of {@code -inf} gives {@code -inf}); a NaN in a window
 * gives NaN, as PyTorch does. Immutable.
 */
public record MaxPool3dSpec(int kernel, int stride, int padding, int dilation, boolean ceilMode) implements PoolStage {
  public static final String NAME = "maxpool3d";

  public MaxPool3dSpec {
    PoolMath.check(NAME, kernel, stride, padding, dilation);
  }

  /** {@code MaxPool3d(kernel)}: stride = kernel, no padding, dilation 1, floor. */
  public static MaxPool3dSpec of(int kernel) {
    return new MaxPool3dSpec(kernel, kernel, 0, 1, false);
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public boolean max() {
    return true;
  }

  /** A max has no divisor. */
  @Override
  public boolean countIncludePad() {
    return false;
  }

  @Override
  public String describe() {
    return String.format("maxpool3d(kernel_size=%d, stride=%d, padding=%d, dilation=%d, ceil_mode=%s)", kernel, stride,
        padding, dilation, ceilMode);
  }

  @Override
  public VolumeShape outputShape(VolumeShape in) {
    return PoolMath.poolShape(NAME, in, kernel, stride, padding, dilation, ceilMode);
  }

  @Override
  public int[] inputPlanes(VolumeShape in, int o0, int o1) {
    // output o reads input planes o*s - p + j*dilation, j in [0, k), clipped to the volume
    return new int[] {Math.max(0, o0 * stride - padding),
        Math.min(in.d(), (o1 - 1) * stride - padding + (kernel - 1) * dilation + 1)};
  }

  @Override
  public void runCpu(Parallel par, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    MaxPool3dCpu.fast(this, par, in, slab, x, n, y);
  }

  @Override
  public void runReference(VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    MaxPool3dCpu.reference(this, in, slab, x, n, y);
  }

  @Override
  public GpuStep gpu(List<Stage> stages, List<VolumeShape> shapes, int i, boolean fuseStages) {
    return MaxPool3dGpu.step(this, i, shapes.get(i), shapes.get(i + 1));
  }
}
