package io.volpool.exec;

import io.volpool.backend.Backend;
import io.volpool.backend.Batch;
import io.volpool.backend.BatchExecutor;
import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.VolumePlan;
import io.volpool.format.Dtype;
import io.volpool.format.ValueType;
import io.volpool.io.BadRecordException;
import io.volpool.io.PageGate;
import io.volpool.io.VolumeInput;
import io.volpool.io.VolumeSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.memory.MemoryBudgetException;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine of one task: pulls volumes from a {@link VolumeInput}, groups consecutive volumes of
 * one shape into batches, runs them through a backend and hands back finished batches in input
 * order. While a batch is on the device, the task thread reads the next one, so reading, copies,
 * kernels and writing overlap, and at most two batches per task are held.
 *
 * <p>Waiting is ordered so tasks never wait on each other in a circle: the runner waits for budget
 * or a GPU stream only while it holds no batch; holding one, it asks without waiting and, when
 * refused, finishes what it holds first. Readers ask for page memory through the same rule
 * ({@link PageGate}). Not thread-safe: one task thread drives it. {@link #close()} gives every
 * batch back, also after a failure.
 */
public final class BatchRunner implements TaskRun {
  private Runnable onRead = () -> {};

  @Override
  public void onRead(Runnable listener) {
    this.onRead = listener;
  }

  private static final Logger LOG = LoggerFactory.getLogger(BatchRunner.class);
  private static final long PROGRESS_EVERY_NANOS = 30_000_000_000L;
  /** Batches a task holds at once: one on the device, one being filled. */
  static final int MAX_HELD = 2;

  /**
   * A finished batch: its volumes (in input order) and their output; valid until the next call to
   * {@link #next()}. For rows of a volume stored across rows, {@code planes[i]} is output row
   * {@code i}'s plane range {@code {d0, d1}} of the whole output {@code outShape} (null otherwise).
   */
  public record Finished(List<VolumeSource> items, VolumeShape outShape, Dtype dtype, ByteBuffer output, long[] offsets,
      int[][] planes, TaskState task) {
    public Finished(List<VolumeSource> items, VolumeShape outShape, Dtype dtype, ByteBuffer output, long[] offsets,
        TaskState task) {
      this(items, outShape, dtype, output, offsets, null, task);
    }

    /** Bytes of one whole output volume in {@link #dtype}. */
    public long volumeBytes() {
      return outShape.numel() * dtype.itemSize();
    }
  }

  private record Submitted(Batch batch, List<VolumeSource> items) {}

  private final VolumeInput input;
  private final Backend backend;
  private final int device;
  private final EngineSpec spec;
  /** The task's spill files, reused volume after volume: copies of compressed volumes, slabbed volumes' outputs. */
  private final ScratchMap spillIn;
  private final ScratchMap spillOut;
  private final int outputGap;
  private final Planner planner;
  private final MemoryBudget budget;
  private final PhaseTimes times;
  private final TaskState task;
  private final String taskName;
  private final ArrayDeque<Submitted> inflight = new ArrayDeque<>();
  private final Gate gate;
  private VolumeSource peeked;
  private boolean ended;
  private BatchExecutor exec;
  private VolumeShape execShape;
  private ValueType execType;
  private VolumeShape outShape;
  private Batch filling;
  private List<VolumeSource> fillingItems;
  private Batch lastReturned;
  /** A slabbed volume's output (in {@link #spillOut}), returned by the next call. */
  private Finished spilled;
  private StreamedVolume streamed;
  private long slabbed;
  private long volumesIn;
  private long bytesIn;
  private long bytesOut;
  private long batches;
  private final long started = System.nanoTime();
  private long lastLog = started;

  /**
   * @param device the device index on {@code backend} (the Spark layer maps the task's resources to it)
   * @param outputGap bytes before each output volume that the writer fills (a Parquet length prefix)
   * @param times where waiting and device time are added
   */
  public BatchRunner(VolumeInput input, Backend backend, int device, EngineSpec spec, MemoryBudget budget,
      TaskState task, String taskName, ScratchFiles scratch) {
    this.input = input;
    this.backend = backend;
    this.device = device;
    this.spec = spec;
    this.spillIn = new ScratchMap(scratch, "in");
    this.spillOut = new ScratchMap(scratch, "out");
    this.outputGap = spec.outputGap();
    this.planner = new Planner(backend, device, budget, spec);
    this.budget = budget;
    this.gate = new Gate();
    this.task = task;
    this.times = task.times();
    this.taskName = taskName;
  }

  @Override
  public long volumesIn() {
    return volumesIn;
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
    return batches;
  }

  /** True while the runner holds no batch: only then may it wait for memory or a device. */
  private boolean holdsNothing() {
    return filling == null && inflight.isEmpty();
  }

  /** Page memory for readers, under the runner's waiting rule. */
  private final class Gate extends PageGate.Budgeted {
    Gate() {
      super(BatchRunner.this.budget);
    }

    @Override
    public boolean acquire(long bytes, String what) {
      long t0 = System.nanoTime();
      boolean ok = budget.acquire(bytes, MemoryBudget.Use.PAGES, holdsNothing(), () -> what);
      times.add(Phase.WAIT_BUDGET, System.nanoTime() - t0);
      return ok;
    }
  }

  /** Reads ahead one volume; false when the gate refused page memory (free batches, then retry). */
  private boolean peek() {
    while (peeked == null && !ended) {
      try {
        peeked = input.next(gate);
      } catch (PageGate.Refused r) {
        return false;
      } catch (BadRecordException e) {
        if (!spec.quarantine() || !input.stepsOverBadRecords()) {
          throw e;
        }
        // a whole file broke a rule before any volume of it was read: set aside, and on to the next file
        quarantine(e, null);
        continue;
      }
      if (peeked == null) {
        ended = true;
      }
    }
    return true;
  }

  /**
   * Sets bad record {@code e} aside when the run quarantines bad records ({@code spark.volpool.badRecords.path}):
   * noted in the task's state (its output writer commits it with the task) and logged; the task reads on.
   * {@code from} is the record's source (null: {@code e} names a whole file). False when bad records fail the task.
   */
  private boolean quarantine(BadRecordException e, VolumeSource from) {
    if (!spec.quarantine()) {
      return false;
    }
    task.quarantine(io.volpool.io.QuarantinedRecord.of(e, from));
    peeked = null;
    int n = task.quarantined().size();
    if (n <= BadRecordException.NAMED) {
      LOG.warn("{}: set aside {}{}", taskName, e.getMessage(), n == BadRecordException.NAMED
          ? " (further bad records of this task are set aside without a line here)" : "");
    }
    return true;
  }

  /**
   * The next finished batch, in input order; null when the input is exhausted. The returned
   * output is valid until the next call.
   */
  @Override
  public Finished next() {
    if (lastReturned != null) {
      lastReturned.close();
      lastReturned = null;
    }
    while (true) {
      if (streamed != null) {
        Finished f = streamed.next();
        if (f != null) {
          bytesOut += f.output().capacity() - outputGap;
          maybeLog();
          return f;
        }
        batches += streamed.slabs();
        slabDone();
        streamed.close();
        streamed = null;
      }
      fill();
      if (streamed != null) {
        continue;
      }
      if (spilled != null) {
        Finished f = spilled;
        spilled = null;
        maybeLog();
        return f;
      }
      if (ended && filling != null && fillingItems.isEmpty()) {
        filling.close();
        filling = null;
      }
      if (filling != null && !fillingItems.isEmpty() && (ended || inflight.isEmpty())) {
        // the input ended, or the device was busy with our only other batch, which is written by now
        submitFilling();
      }
      if (!inflight.isEmpty()) {
        return finish(inflight.poll());
      }
      if (ended && filling == null) {
        closeExecutor();
        return null;
      }
    }
  }

  /**
   * Fills and submits batches until the input ends or the runner must first hand back a finished
   * batch (it holds {@link #MAX_HELD}, or was refused memory or a device while holding one).
   */
  private void fill() {
    while (true) {
      if (filling != null && fillingItems.size() == exec.maxBatch() && !submitFilling()) {
        return;
      }
      if (!peek()) {
        // a reader needs page memory: give up what we hold, in order, then ask again
        if (filling != null && fillingItems.isEmpty()) {
          filling.close();
          filling = null;
        } else if (filling != null && !submitFilling()) {
          return;
        }
        if (!holdsNothing()) {
          return;
        }
        continue;
      }
      VolumeSource item = peeked;
      if (item == null) {
        return;
      }
      VolumeShape s;
      ValueType t;
      try {
        s = item.shape();
        t = item.valueType();
      } catch (BadRecordException e) {
        if (quarantine(e, item)) {
          continue;
        }
        throw withTheRest(e);
      }
      if (exec != null && (!s.equals(execShape) || !t.equals(execType))) {
        if (filling != null && !fillingItems.isEmpty() && !submitFilling()) {
          return;
        }
        if (!inflight.isEmpty()) {
          return;
        }
        if (filling != null) {
          filling.close();
          filling = null;
        }
        closeExecutor();
      }
      VolumePlan vp;
      try {
        vp = planFor(s, item.record());
      } catch (BadRecordException e) {
        if (quarantine(e, item)) {
          continue;
        }
        throw withTheRest(e);
      }
      if (vp.slabbed()) {
        // larger than a batch may be: hand back what we hold, then run it alone in slabs
        if (filling != null && !fillingItems.isEmpty() && !submitFilling()) {
          return;
        }
        if (filling != null) {
          filling.close();
          filling = null;
        }
        if (!inflight.isEmpty()) {
          return;
        }
        closeExecutor();
        runSpilled(item, vp);
        return;
      }
      if (exec == null) {
        openExecutor(s, t, vp);
      }
      if (filling == null) {
        if (inflight.size() >= MAX_HELD) {
          return;
        }
        long t0 = System.nanoTime();
        long a0 = io.volpool.memory.BufferPool.allocatingNanos();
        try {
          filling = exec.newBatch(inflight.isEmpty());
        } catch (MemoryBudgetException e) {
          throw new MemoryBudgetException("volume " + item.record() + " " + s + " (" + MemoryBudget.mib(s.bytes()) + "): "
              + e.getMessage(), e.requested(), e.limit());
        }
        // a new batch waits for room in the budget, then allocates its buffers (pinned memory is slow to get)
        long allocating = io.volpool.memory.BufferPool.allocatingNanos() - a0;
        times.add(Phase.ALLOCATE, allocating);
        times.add(Phase.WAIT_BUDGET, Math.max(0, System.nanoTime() - t0 - allocating));
        if (filling == null) {
          return;
        }
        fillingItems = new ArrayList<>();
      }
      if (exec.stored().isFloat32()) {
        item.copyTo(filling.input());
      } else {
        // the batch takes the stored values and widens them itself (on the GPU, after the copy)
        filling.rescale(fillingItems.size(), item.rescale());
        item.copyStoredTo(filling.input());
      }
      fillingItems.add(item);
      task.read(item.storedDtype());
      peeked = null;
      volumesIn++;
      bytesIn += item.storedBytes();
      onRead.run();
    }
  }

  /**
   * {@code first} naming the other bad records of this task too: the task writes nothing more, but checks
   * each remaining record's shape, dtype, rescale and fit to the pipeline (no values are read), up to
   * {@link BadRecordException#NAMED} bad records, so one run names what a user must fix, not one record a run.
   */
  private BadRecordException withTheRest(BadRecordException first) {
    peeked = null;
    List<String> more = new ArrayList<>();
    String stopped = null;
    long checked = 0;
    try {
      while (true) {
        VolumeSource v = input.next(gate);
        if (v == null) {
          break;
        }
        checked++;
        try {
          VolumeShape s = v.shape();
          v.valueType();
          try {
            spec.pipeline().outputShape(s);
          } catch (IllegalArgumentException e) {
            throw unfit(v.record(), s, e);
          }
        } catch (BadRecordException e) {
          more.add(e.getMessage());
          if (more.size() >= BadRecordException.NAMED) {
            stopped = taskName + " stopped looking after " + (more.size() + 1) + " bad records; there may be more";
            break;
          }
        }
      }
    } catch (PageGate.Refused | BadRecordException | io.volpool.io.CorruptInputException e) {
      if (e instanceof BadRecordException b) {
        more.add(b.getMessage());
      }
      stopped = taskName + " could not look past record " + (checked + 1) + " after the first bad one"
          + (e instanceof PageGate.Refused ? ": no page memory while it holds batches" : "") + "; there may be more";
    }
    if (!more.isEmpty()) {
      LOG.error("{}: {} bad records: {}", taskName, more.size() + 1, first.getMessage() + "; " + String.join("; ", more));
    }
    return BadRecordException.with(first, more, stopped);
  }

  /** Record {@code record} of shape {@code s}, which the pipeline refused with {@code e}, as a bad record. */
  private BadRecordException unfit(String record, VolumeShape s, IllegalArgumentException e) {
    return new BadRecordException(record, "shape " + s + " cannot go through pipeline " + spec.pipeline().describe() + ": "
        + e.getMessage(), e);
  }

  /** The backend's plan for volumes of {@code s} (whole in batches, or alone in slabs), decided once per shape. */
  private VolumePlan planFor(VolumeShape s, String record) {
    if (!s.equals(planShape)) {
      try {
        plan = planner.volumes(s, input.volumesAtMost());
      } catch (IllegalArgumentException e) {
        throw unfit(record, s, e);
      } catch (MemoryBudgetException e) {
        throw new MemoryBudgetException("volume " + record + " " + s + " (" + MemoryBudget.mib(s.bytes()) + "): "
            + e.getMessage(), e.requested(), e.limit());
      }
      planShape = s;
    }
    return plan;
  }

  private VolumeShape planShape;
  private VolumePlan plan;

  /** Runs one volume too large for a batch through {@link SpilledVolume}; its output is the next finished batch. */
  private void runSpilled(VolumeSource item, VolumePlan vp) {
    VolumeShape s = item.shape();
    try {
      outShape = spec.pipeline().outputShape(s);
    } catch (IllegalArgumentException e) {
      throw unfit(item.record(), s, e);
    }
    LOG.info("{}: volume {} {} ({}) runs alone on {}, in slabs along D: {}", taskName, item.record(), s,
        MemoryBudget.mib(s.bytes()), backend.name(device), vp.why());
    progress.start(item.storedBytes());
    task.read(item.storedDtype());
    try {
      if (spec.outputRows()) {
        // written across rows: the output streams out row by row as the slabs run, whatever its size
        streamed = StreamedVolume.start(item, spec.pipeline(), planner, backend, device, vp.slabPlanes(), budget, task, spillIn,
            done -> slabProgress(done, outShape.d()));
      } else {
        spilled = SpilledVolume.run(item, spec.pipeline(), backend, device, vp.slabPlanes(), outputGap, task, spillIn,
            spillOut, done -> slabProgress(done, outShape.d()));
        slabDone();
        bytesOut += spec.pipeline().outputBytes(outShape);
      }
    } catch (IllegalArgumentException e) {
      throw new BadRecordException(item.record(), e.getMessage(), e);
    }
    peeked = null;
    volumesIn++;
    onRead.run();
    slabbed++;
  }

  private final SlabProgress progress = new SlabProgress();

  /** Counts the slabbed volume's input bytes as its slabs finish ({@code done} of {@code total} output planes). */
  private void slabProgress(long done, long total) {
    bytesIn += progress.advance(done, total);
    onRead.run();
  }

  /** Counts what is left of the slabbed volume's input bytes, now that it is done. */
  private void slabDone() {
    bytesIn += progress.finish();
    onRead.run();
  }

  /** Submits the batch being filled; false (still filling) when the device is busy and we hold another batch. */
  private boolean submitFilling() {
    if (!exec.submit(filling, fillingItems.size(), inflight.isEmpty())) {
      return false;
    }
    inflight.add(new Submitted(filling, fillingItems));
    batches++;
    filling = null;
    fillingItems = null;
    return true;
  }

  private Finished finish(Submitted s) {
    ByteBuffer out = s.batch().output();
    times.addAll(s.batch().times());
    long[] offsets = new long[s.items().size()];
    for (int i = 0; i < offsets.length; i++) {
      offsets[i] = s.batch().outputOffset(i);
    }
    bytesOut += spec.pipeline().outputBytes(outShape) * offsets.length;
    lastReturned = s.batch();
    maybeLog();
    return new Finished(s.items(), outShape, spec.pipeline().output(), out, offsets, task);
  }

  private void openExecutor(VolumeShape s, ValueType t, VolumePlan vp) {
    Pipeline p = spec.pipeline();
    outShape = p.outputShape(s);
    exec = backend.open(p, s, t, vp.batch(), device, outputGap);
    execShape = s;
    execType = t;
    String widened = t.isFloat32() ? "" : exec.stored().isFloat32() ? ", " + t + " widened by the reader"
        : ", " + t + " widened in the batch";
    LOG.info("{}: {} volumes {} -> {} on {}, batches of up to {} ({} of host memory each{}): {}", taskName, p.describe(), s,
        outShape, backend.name(device), exec.maxBatch(), MemoryBudget.mib(exec.batchBytes()), widened, vp.why());
  }

  private void closeExecutor() {
    if (exec != null) {
      exec.close();
      exec = null;
      execShape = null;
      execType = null;
    }
  }

  private void maybeLog() {
    long now = System.nanoTime();
    if (now - lastLog >= PROGRESS_EVERY_NANOS) {
      lastLog = now;
      double secs = (now - started) / 1e9;
      LOG.info("{}: {} volumes in {} batches, {} MiB in, {} s, {} volumes/s", taskName, volumesIn, batches,
          bytesIn >> 20, String.format("%.1f", secs), String.format("%.1f", volumesIn / secs));
    }
  }

  @Override
  public long slabbedVolumes() {
    return slabbed;
  }

  /** Gives back every batch (waiting for device work still running) and the input; safe to call twice. */
  @Override
  public void close() {
    RuntimeException first = null;
    spilled = null;
    spillIn.close();
    spillOut.close();
    if (streamed != null) {
      try {
        streamed.close();
      } catch (RuntimeException e) {
        first = e;
      }
      streamed = null;
    }
    List<Batch> all = new ArrayList<>();
    if (lastReturned != null) {
      all.add(lastReturned);
      lastReturned = null;
    }
    for (Submitted s : inflight) {
      all.add(s.batch());
    }
    inflight.clear();
    if (filling != null) {
      all.add(filling);
      filling = null;
    }
    for (Batch b : all) {
      try {
        b.close();
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        }
      }
    }
    try {
      closeExecutor();
      input.close();
    } catch (RuntimeException e) {
      if (first == null) {
        first = e;
      }
    }
    if (first != null) {
      throw first;
    }
  }
}
