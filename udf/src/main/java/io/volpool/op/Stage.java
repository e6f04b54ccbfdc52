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
}
