package io.volpool.op;

import java.io.Serializable;

/** One operator of a pipeline: its parameters and shape arithmetic. Immutable and serializable. */
public sealed interface Stage extends Serializable permits AvgPool3dSpec, FusedOp {
  /** The name used in {@code spark.volpool.pipeline}. */
  String name();

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
}
