package io.volpool.io.parquet;

import io.volpool.io.CorruptInputException;
import io.volpool.io.PageGate;
import io.volpool.io.PlaneVolume;
import io.volpool.io.VolumeSource;

import io.volpool.backend.FloatSink;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.memory.MemoryBudgetException;
import io.volpool.op.VolumeShape;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;

/**
 * Reads the volumes of a task that are stored across rows, each as a {@link PlaneSource}: its rows
 * in plane order, wherever the driver found them. While the slabs of one row run, the next row is
 * read on a thread of its own, so reading overlaps the kernels; at most two rows are in memory. A
 * row is read with the same reader as whole-volume rows (so every codec and page kind works) and
 * must still be what the driver planned (id and planes); else the input changed under the job. Row
 * buffers are counted in the memory budget.
 */
public final class PlaneRowsInput implements io.volpool.io.SlabbedInput<PlaneVolume> {
  private final TensorLayout layout;
  private final io.volpool.io.InputRescale rescale;
  private final Configuration conf;
  private final PhaseTimes times;
  private final PhaseTimes aheadTimes = new PhaseTimes();
  private final MemoryBudget budget;
  private final AtomicLong rowsRead = new AtomicLong();
  /** The rows' tensor bytes read, at their stored width (what a summary counts as read). */
  private final AtomicLong storedRead = new AtomicLong();
  private ExecutorService ahead;
  private ParquetVolumeInput cur;
  private ParquetSplit curSplit;
  private long curNext;
  /** Page memory (compressed or dictionary pages read through the heap) from the budget, never refused. */
  private final PageGate pages;

  public PlaneRowsInput(TensorLayout layout, Configuration conf, MemoryBudget budget, PhaseTimes times) {
    this(layout, io.volpool.io.InputRescale.NONE, conf, budget, times);
  }

  /** As above, each row's values rescaled as {@code rescale} says. */
  public PlaneRowsInput(TensorLayout layout, io.volpool.io.InputRescale rescale, Configuration conf, MemoryBudget budget,
      PhaseTimes times) {
    this.layout = layout;
    this.rescale = rescale;
    this.conf = conf;
    this.budget = budget;
    this.times = times;
    this.pages = new PageGate.Budgeted(budget) {
      @Override
      public boolean acquire(long bytes, String what) {
        if (bytes > budget.maxRequest()) {
          throw new MemoryBudgetException(what + " needs " + MemoryBudget.mib(bytes) + " of host memory at once, but the"
              + " budget admits at most " + MemoryBudget.mib(budget.maxRequest()) + " per request (half of "
              + MemoryBudget.SETTING + "=" + MemoryBudget.mib(budget.limit()) + "); raise it, or write the rows"
              + " uncompressed and without dictionary encoding, which stream", bytes, budget.limit());
        }
        force(bytes);
        return true;
      }
    };
  }

  /** Input rows read so far, over every volume. */
  @Override
  public long unitsRead() {
    return rowsRead.get();
  }

  /** The tensor bytes of the rows read so far, at their stored dtype's width; read by any thread. */
  @Override
  public long storedBytesRead() {
    return storedRead.get();
  }

  /**
   * The row {@code r} of the plan, positioned for reading its data. One thread at a time: the task
   * thread between volumes and before a volume's read-ahead starts, else the read-ahead thread. Its
   * time goes to {@code aheadTimes}, moved to the task's times when no read-ahead runs.
   */
  private ParquetVolumeInput.Row row(PlaneVolume v, PlaneVolume.Row r) {
    PhaseTimes t = aheadTimes;
    if (cur == null || !r.split().equals(curSplit) || r.row() < curNext) {
      closeCurrent();
      cur = new ParquetVolumeInput(List.of(r.split()), layout, rescale, conf, t);
      curSplit = r.split();
      curNext = 0;
    }
    ParquetVolumeInput.Row row = null;
    while (curNext <= r.row()) {
      row = cur.next(pages);
      if (row == null) {
        throw new CorruptInputException(r.split().path() + ": row " + r.row() + " of the row group at byte "
            + r.split().start() + " is gone; the input changed while the job ran");
      }
      curNext++;
    }
    String want = "id=" + v.id();
    int[] planes = row.planes();
    if (!row.record().equals(want) || planes == null || planes[0] != r.d0() || planes[1] != r.d1()) {
      throw new CorruptInputException(r.split().path() + ": row " + r.row() + " of the row group at byte "
          + r.split().start() + " holds " + row.record() + " planes " + (planes == null ? "none" : "[" + planes[0] + ", "
          + planes[1] + ")") + " where the driver found " + want + " planes [" + r.d0() + ", " + r.d1()
          + "); the input changed while the job ran");
    }
    return row;
  }

  /** The first row of {@code v} (its pass-through columns go to the output). Call between volumes. */
  @Override
  public ParquetVolumeInput.Row first(PlaneVolume v) {
    ParquetVolumeInput.Row first = row(v, v.firstRow());
    aheadTimes.moveTo(times);
    return first;
  }

  /** Two input rows of {@code v}'s largest: one being read, one read ahead. */
  @Override
  public long heldBytes(PlaneVolume v) {
    return 2 * v.rows().stream().mapToLong(r -> (long) (r.d1() - r.d0())).max().orElse(1)
        * v.shape().c() * v.shape().h() * v.shape().w() * Float.BYTES;
  }

  /** {@code v} read forward along D. Close it to give back its row buffers. */
  @Override
  public PlaneSource open(PlaneVolume v) {
    if (ahead == null) {
      ahead = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "volpool-rows-ahead");
        t.setDaemon(true);
        return t;
      });
    }
    return new Source(v);
  }

  /** One row's planes in memory, counted in the budget. */
  private record Loaded(float[] buf, long bytes, int lo, int hi) {}

  private final class Source implements PlaneSource {
    private final PlaneVolume v;
    private final VolumeShape shape;
    private final int hw;
    private int next;
    private Loaded row;
    private Future<Loaded> pending;

    Source(PlaneVolume v) {
      this.v = v;
      this.shape = v.shape();
      this.hw = shape.h() * shape.w();
    }

    @Override
    public String record() {
      return v.record();
    }

    @Override
    public VolumeShape shape() {
      return shape;
    }

    /** Reads row {@code i} of the volume (on the read-ahead thread, or this one before it starts). */
    private Loaded load(int i) {
      PlaneVolume.Row r = v.rows().get(i);
      long bytes = (long) shape.c() * (r.d1() - r.d0()) * hw * Float.BYTES;
      if (bytes > budget.maxRequest() || bytes / Float.BYTES > Integer.MAX_VALUE - 8) {
        throw new MemoryBudgetException("volume " + record() + ": its row holding planes [" + r.d0() + ", " + r.d1()
            + ") is " + MemoryBudget.mib(bytes) + ", more than half of the " + MemoryBudget.mib(budget.limit())
            + " memory budget (" + MemoryBudget.SETTING + "); raise the budget, or write the volume in rows of fewer planes",
            bytes, budget.limit());
      }
      budget.forceAcquire(bytes, MemoryBudget.Use.PAGES);
      try {
        float[] buf = new float[(int) (bytes / Float.BYTES)];
        VolumeSource src = row(v, r);
        src.copyTo(new FloatSink(buf));
        if (v.owns(r)) {
          // a row in the halo of two ranges of a volume is counted by the first
          rowsRead.incrementAndGet();
          storedRead.addAndGet(src.storedBytes());
        }
        return new Loaded(buf, bytes, r.d0(), r.d1());
      } catch (RuntimeException | Error e) {
        budget.release(bytes, MemoryBudget.Use.PAGES);
        throw e;
      }
    }

    /** Makes the next row current and starts reading the one after it. */
    private void advance() {
      Loaded l;
      if (pending != null) {
        Future<Loaded> f = pending;
        pending = null;
        l = join(f);
      } else {
        l = load(next++);
      }
      release(row);
      row = l;
      if (next < v.rows().size()) {
        int i = next++;
        pending = ahead.submit(() -> load(i));
      }
    }

    private Loaded join(Future<Loaded> f) {
      try {
        return f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while reading a row of " + record(), e);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof RuntimeException re) {
          throw re;
        }
        if (e.getCause() instanceof Error er) {
          throw er;
        }
        throw new IllegalStateException(e.getCause());
      }
    }

    @Override
    public void read(int d0, int d1, java.nio.FloatBuffer dst, int at, int channelStride) {
      PlaneVolume.Row firstListed = v.rows().get(0);
      PlaneVolume.Row lastListed = v.rows().get(v.rows().size() - 1);
      if (d0 < firstListed.d0() || d1 > lastListed.d1()) {
        throw new IllegalStateException(record() + ": input planes [" + d0 + ", " + d1 + ") asked for, but the rows planned"
            + " for this task hold [" + firstListed.d0() + ", " + lastListed.d1() + ")");
      }
      int d = d0;
      while (d < d1) {
        while (row == null || d >= row.hi()) {
          advance();
        }
        int n = Math.min(d1, row.hi()) - d;
        int rn = row.hi() - row.lo();
        for (int c = 0; c < shape.c(); c++) {
          dst.put(c * channelStride + at + (d - d0) * hw, row.buf(), (c * rn + d - row.lo()) * hw, n * hw);
        }
        d += n;
      }
    }

    private void release(Loaded l) {
      if (l != null) {
        budget.release(l.bytes(), MemoryBudget.Use.PAGES);
      }
    }

    /** Reads the rows no output plane needed, so every row of the volume is read and counted. */
    void finish() {
      while (next < v.rows().size() || pending != null) {
        advance();
      }
    }

    @Override
    public void close() {
      if (pending != null) {
        try {
          release(join(pending));
        } catch (RuntimeException | Error e) {
          // the volume already failed or finished; its read-ahead's error is not news
        }
        pending = null;
      }
      release(row);
      row = null;
      aheadTimes.moveTo(times);
    }
  }

  /** Reads the rest of {@code src}'s rows (those past the last plane any output reads). */
  @Override
  public void finish(PlaneSource src) {
    ((Source) src).finish();
  }

  private void closeCurrent() {
    if (cur != null) {
      cur.close();
      cur = null;
      curSplit = null;
    }
  }

  @Override
  public void close() {
    if (ahead != null) {
      ahead.shutdownNow();
    }
    closeCurrent();
  }
}
