package io.volpool.ops.fused;

/**
 * The tile of {@code fused_maxpool_taps2_c3_c16} and {@code fused_avgpool_taps2_c3_c16} as their
 * launches assume it: the same constants as {@code FP_TW}, {@code FP_TH} and {@code VOLPOOL_FP_PLANES}
 * in volpool.cu (KernelPlanTest compares them).
 */
public final class FusedGpuGeometry {
  private FusedGpuGeometry() {}

  /** Threads along W of a block, and final outputs along W of its tile. */
  public static final int TW = 16;
  /** Threads along H of a block, and final outputs along H of its tile. */
  public static final int TH = 8;
  /** Final planes one block computes. */
  public static final int PLANES = 2;
}
