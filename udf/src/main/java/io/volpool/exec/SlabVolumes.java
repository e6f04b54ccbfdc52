package io.volpool.exec;

import io.volpool.backend.Backend;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.SlabRun;
import io.volpool.io.BadRecordException;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.io.parquet.PlaneRowsInput;
import io.volpool.io.PlaneVolume;
import io.volpool.io.VolumeSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine of a task whose volumes are stored across rows: each volume runs through the
 * pipeline in slabs along D (sized from the memory budget), reading its rows in plane order, and
 * its output is cut into rows of at most {@code spark.volpool.output.rowBytes}, each a
 * {@link BatchRunner.Finished} of one row with its plane range. Memory holds one input row, one
 * slab's windows and one output row, never the volume. Not thread-safe: one task thread drives it.
 */
public final class SlabVolumes implements TaskRun {
  private Runnable onRead = () -> {};

  @Override
  public void onRead(Runnable listener) {
    this.onRead = listener;
  }

  private static final Logger LOG = LoggerFactory.getLogger(SlabVolumes.class);

  private final List<PlaneVolume> volumes;
  private final PlaneRowsInput input;
  private final Backend backend;
  private final int device;
  private final EngineSpec spec;
  private final MemoryBudget budget;
  private final PhaseTimes times;
  private final TaskState state;
  private final String task;
  private final Planner planner;
  private OutputRows rows;
  private int nextVolume;
  private SlabRun run;
  private PlaneSource src;
  private long bytesOut;
  private long slabs;
  private long done;

  public SlabVolumes(List<PlaneVolume> volumes, PlaneRowsInput input, Backend backend, int device, EngineSpec spec,
      MemoryBudget budget, TaskState state, String task) {
    this.volumes = volumes;
    this.input = input;
    this.backend = backend;
    this.device = device;
    this.spec = spec;
    this.budget = budget;
    this.state = state;
    this.times = state.times();
    this.task = task;
    this.planner = new Planner(backend, device, budget, spec);
  }

  @Override
  public BatchRunner.Finished next() {
    while (true) {
      BatchRunner.Finished f = rows == null ? null : rows.poll();
      if (f != null) {
        bytesOut += f.output().capacity() - ParquetBatchWriter.GAP;
        return f;
      }
      if (run == null) {
        if (rows != null) {
          rows.close(); // every row of the last volume has been handed out
          rows = null;
        }
        if (!open()) {
          return null;
        }
      }
      if (!run.step()) {
        closeVolume();
        volumeDone();
        PlaneRowsInput.finish(src);
        closeSource();
        done++;
      } else {
        slabs++;
      }
    }
  }

  /** Opens the next volume; false when none is left. */
  private boolean open() {
    if (nextVolume >= volumes.size()) {
      return false;
    }
    PlaneVolume v = volumes.get(nextVolume++);
    SlabPlan plan;
    try {
      plan = new SlabPlan(spec.pipeline(), v.shape());
    } catch (IllegalArgumentException e) {
      throw new BadRecordException("id=" + v.id(), "shape " + v.shape() + " cannot go through pipeline "
          + spec.pipeline().describe() + ": " + e.getMessage());
    }
    VolumeShape out = plan.output();
    long inRow = v.rows().stream().mapToLong(r -> (long) (r.d1() - r.d0())).max().orElse(1)
        * v.shape().c() * v.shape().h() * v.shape().w() * Float.BYTES;
    PlaneVolume.Range range = v.range();
    int from = range == null ? 0 : range.outFrom();
    int to = range == null ? out.d() : range.outTo();
    // two input rows: one being read, one read ahead
    Planner.Sizes sizes = planner.rows(plan, 2 * inRow, false, from, to);
    int rowPlanes = sizes.rowPlanes();
    long share = sizes.share();
    int planes = sizes.planes();
    if (planes < 1) {
      long one = backend.slabBytes(plan, 1);
      throw new io.volpool.memory.MemoryBudgetException("volume id=" + v.id() + " " + plan.input() + ": one output plane"
          + " through " + plan.pipeline().describe() + " on " + backend.name(device) + " needs " + MemoryBudget.mib(one)
          + " of slab buffers, more than the " + MemoryBudget.mib(share) + " the " + MemoryBudget.mib(budget.limit())
          + " memory budget leaves beside its input and output rows (or more than the GPU's share); raise "
          + MemoryBudget.SETTING + " (and the memory behind it) to at least " + MemoryBudget.mib(4 * one), one, budget.limit());
    }
    VolumeSource first = input.firstRow(v);
    state.read(first.storedDtype());
    // counted along the volume at the first row's width; made exact by the rows' reads when it is done
    storedBefore = input.storedBytesRead();
    progress.start(v.bytes() / Float.BYTES * first.valueType().itemSize());
    src = input.open(v);
    rows = new OutputRows(first, out, plan.pipeline().output(), rowPlanes, budget, state, done -> slabDone(done, to - from),
        to);
    // a range's slabs are the whole run's slabs of a plane count that divides its bounds: the same output bits
    run = backend.startSlabs(plan, planes, src, rows, times, device, from, to);
    LOG.info("{}: volume {} {} -> {} in {} rows on {}, slabs of {} output planes ({} of host buffers), output rows of {}"
        + " planes", task, v.record(), v.shape(), out, v.rows().size(), backend.name(device), run.planes(),
        MemoryBudget.mib(run.bytes()), rowPlanes);
    return true;
  }

  private final SlabProgress progress = new SlabProgress();
  /** Bytes read counted before the open volume, and the rows' stored bytes read by then. */
  private long bytesIn;
  private long storedBefore;

  /** Counts the open volume's input bytes as its slabs finish ({@code done} of {@code total} output planes). */
  private void slabDone(long done, long total) {
    bytesIn += progress.advance(done, total);
    onRead.run();
  }

  /** The open volume is done: its count becomes what its rows' reads measured, at their stored width. */
  private void volumeDone() {
    bytesIn += input.storedBytesRead() - storedBefore - progress.counted();
    progress.start(0);
    onRead.run();
  }

  private void closeVolume() {
    if (run != null) {
      run.close();
      run = null;
    }
  }

  private void closeSource() {
    if (src != null) {
      src.close();
      src = null;
    }
  }

  @Override
  public long volumesIn() {
    return input.rowsRead();
  }

  @Override
  public long bytesIn() {
    return bytesIn;
  }

  @Override
  public long bytesOut() {
    return bytesOut;
  }

  @Override
  public long batches() {
    return slabs;
  }

  @Override
  public long slabbedVolumes() {
    return done;
  }

  @Override
  public void close() {
    try {
      closeVolume();
      closeSource();
      input.close();
    } finally {
      if (rows != null) {
        rows.close();
        rows = null;
      }
    }
  }
}
