package io.volpool.exec;

import io.volpool.backend.Backend;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.SlabRun;
import io.volpool.io.VolumeSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.Pipeline;
import io.volpool.op.SlabPlan;

/**
 * A volume stored in one row (or one .npy file) that runs alone in slabs and is written across rows:
 * its output streams out as rows of whole planes ({@link OutputRows}) while its slabs run, so no
 * output of any size is ever made whole (a fused output of several GiB from one input row). The
 * planes are read where they lie, or from a scratch copy ({@link SpilledVolume#planes}, in the
 * task's scratch file). Driven by one task thread; {@link #close()} gives everything back.
 */
final class StreamedVolume implements AutoCloseable {
  private final PlaneSource src;
  private final OutputRows rows;
  private final SlabRun run;
  private boolean ran;
  private long slabs;

  private StreamedVolume(PlaneSource src, OutputRows rows, SlabRun run) {
    this.src = src;
    this.rows = rows;
    this.run = run;
  }

  /**
   * Starts {@code item} through {@code pipeline} on {@code backend}'s {@code device} in slabs of at
   * most {@code planes} output planes, written in rows as {@code planner} sizes them; call holding no batch.
   * {@code planesDone} is told the output planes done so far after each slab (progress).
   */
  static StreamedVolume start(VolumeSource item, Pipeline pipeline, Planner planner, Backend backend, int device, int planes,
      MemoryBudget budget, TaskState task, ScratchMap scratch, java.util.function.LongConsumer planesDone) {
    PhaseTimes times = task.times();
    SlabPlan plan = new SlabPlan(pipeline, item.shape());
    boolean copy = pipeline.stages().isEmpty();
    // planes are read where they lie (or from one scratch copy): no input rows held beside the slabs
    Planner.Sizes sizes = planner.rows(plan, 0, copy);
    int rowPlanes = sizes.rowPlanes();
    int t = sizes.planes() >= 1 ? Math.min(planes, sizes.planes()) : planes;
    PlaneSource src = null;
    OutputRows rows = null;
    try {
      src = SpilledVolume.planes(item, times, scratch);
      rows = new OutputRows(item, plan.output(), pipeline.output(), rowPlanes, budget, task, planesDone);
      // the identity pipeline copies planes into the rows; nothing to run on a backend
      SlabRun run = copy ? new CopySlabRun(src, rows, t, budget, times) : backend.startSlabs(plan, t, src, rows, times, device);
      return new StreamedVolume(src, rows, run);
    } catch (RuntimeException | Error e) {
      if (rows != null) {
        rows.close();
      }
      if (src != null) {
        src.close();
      }
      throw e;
    }
  }

  /** Output planes per slab. */
  int planes() {
    return run.planes();
  }

  /** Slabs run so far. */
  long slabs() {
    return slabs;
  }

  /** The next output row (valid until the next call), or null once the volume is written. */
  BatchRunner.Finished next() {
    while (true) {
      BatchRunner.Finished f = rows.poll();
      if (f != null || ran) {
        return f;
      }
      if (run.step()) {
        slabs++;
      } else {
        ran = true;
      }
    }
  }

  @Override
  public void close() {
    try {
      run.close();
      src.close();
    } finally {
      rows.close();
    }
  }
}
