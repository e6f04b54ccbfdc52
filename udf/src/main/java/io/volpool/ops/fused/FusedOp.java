package io.volpool.ops.fused;

import io.volpool.op.GpuStep;
import io.volpool.op.Parallel;
import io.volpool.op.PoolMath;
import io.volpool.op.Slab;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.util.List;

/**
 * The fused operator: {@code ConvTranspose3d(Cin, Cout, k, stride, padding, output_padding)} with
 * its bias, {@code * scale1}, {@code AvgPool3d(poolKernel)} (stride = kernel, no padding, floor),
 * {@code + bias[c]}, {@code * scale2}. Immutable; carries its weights so it can travel to executors.
 */
public record FusedOp(int stride, int padding, int outputPadding, int poolKernel, FusedWeights weights)
    implements Stage {
  public static final String NAME = "fused";

  public FusedOp {
    if (stride <= 0) {
      throw new IllegalArgumentException("fused: stride must be positive, got " + stride);
    }
    if (padding < 0) {
      throw new IllegalArgumentException("fused: padding must be non-negative, got " + padding);
    }
    if (outputPadding < 0 || outputPadding >= stride) {
      throw new IllegalArgumentException("fused: output_padding must be non-negative and smaller than stride (as in PyTorch),"
          + " got output_padding=" + outputPadding + " and stride=" + stride);
    }
    if (poolKernel <= 0) {
      throw new IllegalArgumentException("fused: pool_kernel must be positive, got " + poolKernel);
    }
  }

  public int inChannels() {
    return weights.inChannels();
  }

  public int outChannels() {
    return weights.outChannels();
  }

  public int kernel() {
    return weights.kernel();
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String describe() {
    return String.format("fused(%d->%d, kernel=%d, stride=%d, padding=%d, output_padding=%d, pool_kernel=%d)",
        inChannels(), outChannels(), kernel(), stride, padding, outputPadding, poolKernel);
  }

  @Override
  public void runCpu(Parallel par, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    FusedCpu.fast(this, par, in, slab, x, n, y);
  }

  @Override
  public void runReference(VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    FusedCpu.reference(this, in, slab, x, n, y);
  }

  @Override
  public GpuStep gpu(List<Stage> stages, List<VolumeShape> shapes, int i, boolean fuseStages) {
    return FusedGpu.step(this, stages, shapes, i, fuseStages);
  }

  /** The ConvTranspose3d output shape, before pooling. */
  public VolumeShape convShape(VolumeShape in) {
    if (in.c() != inChannels()) {
      throw new IllegalArgumentException("fused: input has " + in.c() + " channels but the model's conv_transpose expects "
          + inChannels() + " (input shape " + in + ")");
    }
    long d = PoolMath.convTransposeLength(in.d(), kernel(), stride, padding, outputPadding);
    long h = PoolMath.convTransposeLength(in.h(), kernel(), stride, padding, outputPadding);
    long w = PoolMath.convTransposeLength(in.w(), kernel(), stride, padding, outputPadding);
    if (d < 1 || h < 1 || w < 1) {
      throw new IllegalArgumentException("fused: ConvTranspose3d output size [" + d + ", " + h + ", " + w
          + "] is not positive for input " + in + " with kernel_size=" + kernel() + ", stride=" + stride
          + ", padding=" + padding + ", output_padding=" + outputPadding);
    }
    if (d > Integer.MAX_VALUE || h > Integer.MAX_VALUE || w > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("fused: ConvTranspose3d output size [" + d + ", " + h + ", " + w + "] is too large");
    }
    return new VolumeShape(outChannels(), (int) d, (int) h, (int) w);
  }

  @Override
  public VolumeShape outputShape(VolumeShape in) {
    VolumeShape c = convShape(in);
    int p = poolKernel;
    if (c.d() < p || c.h() < p || c.w() < p) {
      throw new IllegalArgumentException("fused: ConvTranspose3d output " + c + " of input " + in
          + " is smaller than pool_kernel=" + p + " in some dimension: calculated output size [" + c.c() + ", "
          + c.d() / p + ", " + c.h() / p + ", " + c.w() / p + "] has a dimension below 1");
    }
    return new VolumeShape(c.c(), c.d() / p, c.h() / p, c.w() / p);
  }

  @Override
  public int[] inputPlanes(VolumeShape in, int o0, int o1) {
    // the planes the stencil's taps read (padding taps read their output's first plane)
    FusedStencil.Dim d = FusedStencil.dim(in.d(), kernel(), stride, padding, poolKernel, outputShape(in).d());
    int lo = Integer.MAX_VALUE;
    int hi = Integer.MIN_VALUE;
    for (int o = o0; o < o1; o++) {
      for (int off : d.offset[d.pattern[o]]) {
        lo = Math.min(lo, d.start[o] + off);
        hi = Math.max(hi, d.start[o] + off + 1);
      }
    }
    return new int[] {lo, hi};
  }
}
