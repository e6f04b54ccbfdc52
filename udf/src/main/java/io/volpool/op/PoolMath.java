package io.volpool.op;

/** PyTorch's pooling shape arithmetic ({@code pooling_output_shape}), shared by the pool operators. */
public final class PoolMath {
  private PoolMath() {}

  /** Output length of a 1-D pool window sweep, exactly as {@code at::native::pooling_output_shape}. */
  public static int outputLength(int in, int kernel, int stride, int pad, boolean ceilMode) {
    return outputLength(in, kernel, stride, pad, 1, ceilMode);
  }

  /** The same with {@code dilation} (a window of {@code kernel} cells {@code dilation} apart). */
  public static int outputLength(int in, int kernel, int stride, int pad, int dilation, boolean ceilMode) {
    long num = (long) in + 2L * pad - (long) dilation * (kernel - 1) - 1 + (ceilMode ? stride - 1 : 0);
    long out = Math.floorDiv(num, stride) + 1;
    if (ceilMode && (out - 1) * stride >= (long) in + pad) {
      out--;
    }
    return (int) out;
  }

  /** ConvTranspose output length: {@code (in-1)*stride - 2*pad + kernel + outputPadding} (dilation 1). */
  public static long convTransposeLength(int in, int kernel, int stride, int pad, int outputPadding) {
    return (long) (in - 1) * stride - 2L * pad + kernel + outputPadding;
  }

  /**
   * PyTorch's checks shared by the pool operators, naming {@code op}: positive kernel, stride and
   * dilation; padding non-negative and at most half the kernel.
   */
  public static void check(String op, int kernel, int stride, int padding, int dilation) {
    if (kernel <= 0) {
      throw new IllegalArgumentException(op + ": kernel_size must be positive, got " + kernel);
    }
    if (stride <= 0) {
      throw new IllegalArgumentException(op + ": stride must be positive, got " + stride);
    }
    if (dilation <= 0) {
      throw new IllegalArgumentException(op + ": dilation must be positive, got " + dilation);
    }
    if (padding < 0) {
      throw new IllegalArgumentException(op + ": padding must be non-negative, got " + padding);
    }
    if (padding > kernel / 2) {
      throw new IllegalArgumentException(op + ": padding should be at most half of kernel_size (as in PyTorch), got padding="
          + padding + " and kernel_size=" + kernel);
    }
  }

  /** The output shape of a pool over H, W and D with the same parameters in each, or a PyTorch-worded refusal. */
  public static VolumeShape poolShape(String op, VolumeShape in, int kernel, int stride, int padding, int dilation,
      boolean ceilMode) {
    int od = outputLength(in.d(), kernel, stride, padding, dilation, ceilMode);
    int oh = outputLength(in.h(), kernel, stride, padding, dilation, ceilMode);
    int ow = outputLength(in.w(), kernel, stride, padding, dilation, ceilMode);
    if (od < 1 || oh < 1 || ow < 1) {
      throw new IllegalArgumentException(op + ": input " + in + " is too small for kernel_size=" + kernel
          + ", stride=" + stride + ", padding=" + padding + (dilation != 1 ? ", dilation=" + dilation : "")
          + ": calculated output size [" + in.c() + ", " + od + ", " + oh + ", " + ow + "] has a dimension below 1");
    }
    return new VolumeShape(in.c(), od, oh, ow);
  }
}
