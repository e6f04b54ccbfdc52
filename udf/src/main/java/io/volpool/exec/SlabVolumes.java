package io.volpool.exec;

import io.volpool.backend.Backend;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.SlabRun;
import io.volpool.io.BadRecordException;
import io.volpool.io.SlabbedInput;
import io.volpool.io.SlabbedVolume;
import io.volpool.io.VolumeSource;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine of a task whose volumes the driver planned to run in slabs (volumes stored across rows,
 * and ranges of the output planes of a volume spread over several tasks, from rows or a C-order
 * .npy): each volume runs through the pipeline in slabs along D (sized from the memory budget),
 * reading its planes forward, and its output is cut into rows of at most
 * {@code spark.volpool.output.rowBytes}, each a {@link BatchRunner.Finished} of one row with its
 * plane range. Memory holds what the input holds (one input row read, one ahead), one slab's
 * windows and one output row, never the volume. Not thread-safe: one task thread drives it.
 */
public final class SlabVolumes<E extends SlabbedVolume> implements TaskRun {
  private Runnable onRead = () -> {};

  @Override
  public void onRead(Runnable listener) {
    this.onRead = listener;
  }

  private static final Logger LOG = LoggerFactory.getLogger(SlabVolumes.class);

  private final List<E> volumes;
  private final SlabbedInput<E> input;
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

  public SlabVolumes(List<E> volumes, SlabbedInput<E> input, Backend backend, int device, EngineSpec spec,
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
        input.finish(src); // what no output read but the count must see, before the volume's count is made exact
        volumeDone();
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
    E v = volumes.get(nextVolume++);
    SlabPlan plan;
    try {
      plan = new SlabPlan(spec.pipeline(), v.shape());
    } catch (IllegalArgumentException e) {
      throw new BadRecordException(v.record(), "shape " + v.shape() + " cannot go through pipeline "
          + spec.pipeline().describe() + ": " + e.getMessage());
    }
    VolumeShape out = plan.output();
    int[] range = v.outputPlanes();
    int from = range == null ? 0 : range[0];
    int to = range == null ? out.d() : range[1];
    Planner.Sizes sizes = planner.rows(plan, input.heldBytes(v), false, from, to);
    int rowPlanes = sizes.rowPlanes();
    long share = sizes.share();
    int planes = sizes.planes();
    if (planes < 1) {
      long one = backend.slabBytes(plan, 1);
      throw new io.volpool.memory.MemoryBudgetException("volume " + v.record() + " " + plan.input() + ": one output plane"
          + " through " + plan.pipeline().describe() + " on " + backend.name(device) + " needs " + MemoryBudget.mib(one)
          + " of slab buffers, more than the " + MemoryBudget.mib(share) + " the " + MemoryBudget.mib(budget.limit())
          + " memory budget leaves beside its input and output rows (or more than the GPU's share); raise "
          + MemoryBudget.SETTING + " (and the memory behind it) to at least " + MemoryBudget.mib(4 * one), one, budget.limit());
    }
    VolumeSource first = input.first(v);
    state.read(first.storedDtype());
    // counted along the volume at the first row's width; made exact by the rows' reads when it is done
    storedBefore = input.storedBytesRead();
    progress.start(v.bytes() / Float.BYTES * first.valueType().itemSize());
    src = input.open(v);
    rows = new OutputRows(first, out, plan.pipeline().output(), rowPlanes, budget, state, done -> slabDone(done, to - from),
        to);
    // a range's slabs are the whole run's slabs of a plane count that divides its bounds: the same output bits
    run = backend.startSlabs(plan, planes, src, rows, times, device, from, to);
    LOG.info("{}: volume {} {} -> {} on {}, slabs of {} output planes ({} of host buffers), output rows of {}"
        + " planes", task, v.record(), v.shape(), out, backend.name(device), run.planes(),
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
    return input.unitsRead();
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
