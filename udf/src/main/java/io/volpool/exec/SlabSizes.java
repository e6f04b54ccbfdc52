package io.volpool.exec;

import io.volpool.backend.Backend;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.SlabPlan;

/**
 * The one place that sizes a volume's slabs when it is written across rows: how many output planes
 * a row holds, and how many a slab may compute on the backend within what the memory budget leaves
 * beside the rows the caller holds (its input rows, three output rows). Every runner that streams a
 * volume in slabs asks this; none sizes its own (a source scan checks).
 *
 * @param rowPlanes whole output planes per output row
 * @param outRowBytes bytes of one output row, its length prefix included
 * @param share host bytes the slabs may take
 * @param planes output planes per slab; below 1 when not even one plane fits in {@code share}
 */
record SlabSizes(int rowPlanes, long outRowBytes, long share, int planes) {
  /**
   * @param inputRows bytes of input rows the caller holds beside the slabs (0 when it reads planes in place)
   * @param rowBytes the most data per output row
   * @param copy the identity pipeline: planes are copied, a slab is as large as the share holds
   */
  static SlabSizes of(SlabPlan plan, Backend backend, int device, MemoryBudget budget, long inputRows, long rowBytes,
      boolean copy) {
    int rowPlanes = OutputRows.rowPlanes(plan.output(), rowBytes);
    long outRow = OutputRows.rowBytes(plan.output(), rowPlanes);
    long share = OutputRows.slabShare(budget, inputRows, outRow);
    long planeBytes = (long) plan.output().c() * plan.output().h() * plan.output().w() * Float.BYTES;
    int planes = copy ? (int) Math.min(Integer.MAX_VALUE, share / planeBytes) : backend.slabPlanes(plan, share, device);
    return new SlabSizes(rowPlanes, outRow, share, planes);
  }
}
