package io.volpool.cpu;

import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedOp;
import io.volpool.op.VolumeShape;

/**
 * The CPU implementations of each operator, over {@code n} volumes stored back to back in C order.
 * Two implementations: {@link ReferenceKernels} (plain loops in float64, the yardstick) and
 * {@link FastKernels} (multi-threaded stencils). Both are stateless apart from a thread pool.
 */
public interface VolumeKernels {
  /** {@code y[i] = ((avgpool_P(convT(x[i]) * scale1)) + bias) * scale2} for each of {@code n} volumes. */
  void fused(FusedOp op, VolumeShape in, float[] x, int n, float[] y);

  /** {@code y[i] = AvgPool3d(x[i])} with PyTorch's padding, ceil-mode and divisor rules, for {@code n} volumes. */
  void avgPool3d(AvgPool3dSpec spec, VolumeShape in, float[] x, int n, float[] y);
}
