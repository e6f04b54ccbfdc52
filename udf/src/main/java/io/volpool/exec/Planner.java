package io.volpool.exec;

import io.volpool.backend.Backend;
import io.volpool.backend.VolumePlan;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;

/**
 * The one planner of a task: how volumes run on its backend and device within the executor's memory
 * budget. Every runner asks it, none sizes its own batches or slabs (a source scan checks):
 * {@link #volumes} for volumes that come whole (in batches, or alone in slabs when one is larger than a
 * batch may be), {@link #rows} for a volume streamed in slabs and written across rows, given what the
 * caller holds beside the slabs. The backend answers both from what it knows of its memory (the device's
 * share on a GPU); the planner is where the run's choices meet it.
 */
final class Planner {
  private final Backend backend;
  private final int device;
  private final MemoryBudget budget;
  private final EngineSpec spec;

  Planner(Backend backend, int device, MemoryBudget budget, EngineSpec spec) {
    this.backend = backend;
    this.device = device;
    this.budget = budget;
    this.spec = spec;
  }

  /**
   * How volumes of {@code input} run: whole in batches (of the user's size, else the backend's choice
   * within one request of the budget and the device, never more than {@code volumesAtMost}), or one at a
   * time in slabs along D.
   *
   * @throws IllegalArgumentException when the pipeline cannot take this shape
   * @throws io.volpool.memory.MemoryBudgetException when not even a slab of one output plane fits
   */
  VolumePlan volumes(VolumeShape input, long volumesAtMost) {
    return backend.plan(spec.pipeline(), input, spec.batchSize(), volumesAtMost, device, spec.outputGap(), budget);
  }

  /**
   * Sizes the slabs of a volume written across rows: how many output planes a row holds, and how many
   * a slab may compute within what the budget leaves beside the rows the caller holds (its input rows,
   * three output rows).
   *
   * @param inputRows bytes of input rows the caller holds beside the slabs (0 when it reads planes in place)
   * @param copy the identity pipeline: planes are copied, a slab is as large as the share holds
   */
  Sizes rows(SlabPlan plan, long inputRows, boolean copy) {
    return rows(plan, inputRows, copy, 0, plan.output().d());
  }

  /**
   * As above for output planes {@code [from, to)} of the volume (a range that a task of its own runs):
   * the slab's planes divide the range's bounds ({@link io.volpool.backend.SlabRanges#slabPlanes}), so
   * its slabs are a whole run's and its output the same bits.
   */
  Sizes rows(SlabPlan plan, long inputRows, boolean copy, int from, int to) {
    io.volpool.format.Dtype dtype = plan.pipeline().output();
    int rowPlanes = OutputRows.rowPlanes(plan.output(), dtype, spec.outputRowBytes());
    long outRow = OutputRows.rowBytes(plan.output(), dtype, rowPlanes);
    long share = OutputRows.slabShare(budget, inputRows, outRow);
    long planeBytes = (long) plan.output().c() * plan.output().h() * plan.output().w() * Float.BYTES;
    int planes = copy ? (int) Math.min(Integer.MAX_VALUE, share / planeBytes) : backend.slabPlanes(plan, share, device);
    if (planes >= 1) {
      planes = io.volpool.backend.SlabRanges.slabPlanes(plan, planes, from, to);
    }
    return new Sizes(rowPlanes, outRow, share, planes);
  }

  /**
   * Slabs of a volume written across rows.
   *
   * @param rowPlanes whole output planes per output row
   * @param outRowBytes bytes of one output row, its length prefix included
   * @param share host bytes the slabs may take
   * @param planes output planes per slab; below 1 when not even one plane fits in {@code share}
   */
  record Sizes(int rowPlanes, long outRowBytes, long share, int planes) {}
}
