package io.volpool.ops.fused;

import java.io.Serializable;

/**
 * The learned tensors of the fused operator, as in its PyTorch {@code state_dict}: the
 * ConvTranspose3d weight {@code [Cin, Cout, k, k, k]} and bias {@code [Cout]}, {@code scale1},
 * the per-channel {@code bias [Cout]} and {@code scale2}. Immutable by convention (arrays are not copied on read).
 */
public record FusedWeights(int inChannels, int outChannels, int kernel, float[] weight, float[] convBias,
    float scale1, float[] bias, float scale2) implements Serializable {
  public FusedWeights {
    if (inChannels <= 0 || outChannels <= 0 || kernel <= 0) {
      throw new IllegalArgumentException("fused: in_channels, out_channels and kernel_size must be positive, got "
          + inChannels + ", " + outChannels + ", " + kernel);
    }
    long wn = (long) inChannels * outChannels * kernel * kernel * kernel;
    if (weight.length != wn) {
      throw new IllegalArgumentException("fused: conv_transpose.weight has " + weight.length + " values, expected "
          + wn + " for [" + inChannels + ", " + outChannels + ", " + kernel + ", " + kernel + ", " + kernel + "]");
    }
    if (convBias.length != outChannels) {
      throw new IllegalArgumentException("fused: conv_transpose.bias has " + convBias.length + " values, expected "
          + outChannels + " (out_channels)");
    }
    if (bias.length != outChannels) {
      throw new IllegalArgumentException("fused: bias has " + bias.length + " values, expected " + outChannels
          + " (out_channels)");
    }
  }

  /** Weight at {@code [ci, co, kd, kh, kw]}. */
  public float w(int ci, int co, int kd, int kh, int kw) {
    return weight[(((ci * outChannels + co) * kernel + kd) * kernel + kh) * kernel + kw];
  }
}
