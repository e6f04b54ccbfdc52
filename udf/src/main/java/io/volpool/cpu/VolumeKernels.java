package io.volpool.cpu;

import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedOp;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;

/**
 * The CPU implementations of each operator, over {@code n} volumes (or slabs of volumes) stored
 * back to back in C order. Two implementations: {@link ReferenceKernels} (plain loops in float64,
 * the yardstick) and {@link FastKernels} (multi-threaded stencils). Both are stateless apart from a
 * thread pool. A {@link Slab} says which planes along D the buffers hold; the arithmetic of an
 * output element never depends on it, so slabbed and whole-volume runs agree bit for bit.
 */
public interface VolumeKernels {
  /** {@code y[i] = ((avgpool_P(convT(x[i]) * scale1)) + bias) * scale2} for the slab's planes of each of {@code n} volumes of shape {@code in}. */
  void fused(FusedOp op, VolumeShape in, Slab slab, float[] x, int n, float[] y);

  /** {@code y[i] = AvgPool3d(x[i])} with PyTorch's padding, ceil-mode and divisor rules, for the slab's planes of {@code n} volumes of shape {@code in}. */
  void avgPool3d(AvgPool3dSpec spec, VolumeShape in, Slab slab, float[] x, int n, float[] y);

  /** The whole of {@code n} volumes. */
  default void fused(FusedOp op, VolumeShape in, float[] x, int n, float[] y) {
    fused(op, in, Slab.whole(in, op.outputShape(in)), x, n, y);
  }

  /** The whole of {@code n} volumes. */
  default void avgPool3d(AvgPool3dSpec spec, VolumeShape in, float[] x, int n, float[] y) {
    avgPool3d(spec, in, Slab.whole(in, spec.outputShape(in)), x, n, y);
  }
}
