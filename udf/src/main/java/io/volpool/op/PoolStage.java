package io.volpool.op;

/**
 * A pooling stage described by its window in PyTorch's terms (the same value in D, H and W), so the
 * kernel of the stage before it may take the pool in: fused's GPU kernels fold a following pool into
 * one pass, the intermediate never in memory. Immutable.
 */
public interface PoolStage extends Stage {
  int kernel();

  int stride();

  int padding();

  int dilation();

  boolean ceilMode();

  /** True for a max (padded cells never win; a NaN in a window gives NaN), false for an average. */
  boolean max();

  /** For an average, whether padded cells count in the divisor (a max ignores it). */
  boolean countIncludePad();
}
