package io.volpool.op;

/**
 * {@code torch.nn.AvgPool3d(kernel_size, stride, padding, ceil_mode, count_include_pad)} with the
 * same value for every spatial dimension. With {@code countIncludePad} the divisor counts padded
 * cells (but not cells a ceil-mode window reaches past the padding); without it only input cells.
 */
public record AvgPool3dSpec(int kernel, int stride, int padding, boolean ceilMode, boolean countIncludePad)
    implements Stage {
  public static final String NAME = "avgpool3d";

  public AvgPool3dSpec {
    if (kernel <= 0) {
      throw new IllegalArgumentException("avgpool3d: kernel_size must be positive, got " + kernel);
    }
    if (stride <= 0) {
      throw new IllegalArgumentException("avgpool3d: stride must be positive, got " + stride);
    }
    if (padding < 0) {
      throw new IllegalArgumentException("avgpool3d: padding must be non-negative, got " + padding);
    }
    if (padding > kernel / 2) {
      throw new IllegalArgumentException("avgpool3d: padding should be at most half of kernel_size (as in PyTorch), got padding="
          + padding + " and kernel_size=" + kernel);
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public VolumeShape outputShape(VolumeShape in) {
    int od = PoolMath.outputLength(in.d(), kernel, stride, padding, ceilMode);
    int oh = PoolMath.outputLength(in.h(), kernel, stride, padding, ceilMode);
    int ow = PoolMath.outputLength(in.w(), kernel, stride, padding, ceilMode);
    if (od < 1 || oh < 1 || ow < 1) {
      throw new IllegalArgumentException("avgpool3d: input " + in + " is too small for kernel_size=" + kernel
          + ", stride=" + stride + ", padding=" + padding + ": calculated output size [" + in.c() + ", " + od + ", " + oh
          + ", " + ow + "] has a dimension below 1");
    }
    return new VolumeShape(in.c(), od, oh, ow);
  }

  @Override
  public int[] inputPlanes(VolumeShape in, int o0, int o1) {
    // output o averages input planes [o*s - p, o*s - p + k) clipped to the volume
    return new int[] {Math.max(0, o0 * stride - padding), Math.min(in.d(), (o1 - 1) * stride - padding + kernel)};
  }
}
