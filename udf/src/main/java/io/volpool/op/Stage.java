package io.volpool.op;

import java.io.Serializable;
import java.util.List;

/**
 * One operator of a pipeline, as configured: its parameters, shape arithmetic and kernels.
 * Immutable and serializable (it travels to executors). Each operator is one unit in its own
 * package under {@code io.volpool.ops}, listed once in {@code io.volpool.ops.Operators}; the
 * backends run a stage only through this contract, so they never name an operator.
 */
public interface Stage extends Serializable {
  /** The name used in {@code spark.volpool.pipeline}. */
  String name();

  /** The stage with every parameter in PyTorch's words, e.g. {@code maxpool3d(kernel_size=3, stride=2, ...)}. */
  String describe();

  /**
   * The output shape for {@code in}, computed as PyTorch does.
   *
   * @throws IllegalArgumentException when PyTorch would reject this input, in words naming the rule
   */
  VolumeShape outputShape(VolumeShape in);

  /**
   * The input planes {@code [lo, hi)} along D that output planes {@code [o0, o1)} read, for an input
   * of shape {@code in}: the halo a slab needs. Every stage is local along D, so this is a bounded
   * window a little wider than the output's share of the input.
   */
  int[] inputPlanes(VolumeShape in, int o0, int o1);

  /**
   * The fast CPU kernel: {@code y} = this stage on the slab's planes of {@code n} volumes of shape
   * {@code in} stored back to back in {@code x} (layout in {@link Slab}), work split with {@code par}.
   */
  void runCpu(Parallel par, VolumeShape in, Slab slab, float[] x, int n, float[] y);

  /** The reference CPU kernel: PyTorch's definition as plain single-threaded loops (float64 where it sums); the yardstick. */
  void runReference(VolumeShape in, Slab slab, float[] x, int n, float[] y);

  /**
   * The GPU kernel launch for this stage at position {@code i} of {@code stages} (whose shapes,
   * input first, are {@code shapes}). A stage may also take the stages after it into one kernel
   * (the returned step's {@code dst() > i + 1}) when {@code fuseStages} allows.
   */
  GpuStep gpu(List<Stage> stages, List<VolumeShape> shapes, int i, boolean fuseStages);
}
