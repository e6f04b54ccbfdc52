package io.volpool.op;

/** PyTorch's pooling shape arithmetic ({@code pooling_output_shape}), shared by the pool operators. */
public final class PoolMath {
  private PoolMath() {}

  /** Output length of a 1-D pool window sweep, exactly as {@code at::native::pooling_output_shape}. */
  public static int outputLength(int in, int kernel, int stride, int pad, boolean ceilMode) {
    long num = (long) in + 2L * pad - (kernel - 1) - 1 + (ceilMode ? stride - 1 : 0);
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
}
