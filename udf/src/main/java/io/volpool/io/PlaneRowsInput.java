package io.volpool.io;

import io.volpool.backend.FloatSink;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.VolumeShape;
import java.util.List;
import org.apache.hadoop.conf.Configuration;

/**
 * Reads the volumes of a task that are stored across rows, each as a {@link PlaneSource}: its rows
 * in plane order, wherever the driver found them, one row in memory at a time. A row is read with
 * the same reader as whole-volume rows (so every codec and page kind works), and must still be what
 * the driver planned (id and planes); else the input changed under the job. Row buffers are counted
 * in the memory budget.
 */
public final class PlaneRowsInput implements AutoCloseable {
  private final TensorLayout layout;
  private final Configuration conf;
  private final PhaseTimes times;
  private final MemoryBudget budget;
  private ParquetVolumeInput cur;
  private ParquetSplit curSplit;
  private long curNext;
  private long rowsRead;

  public PlaneRowsInput(TensorLayout layout, Configuration conf, MemoryBudget budget, PhaseTimes times) {
    this.layout = layout;
    this.conf = conf;
    this.budget = budget;
    this.times = times;
  }

  /** Input rows read so far, over every volume. */
  public long rowsRead() {
    return rowsRead;
  }

  /** The row {@code r} of the plan, positioned for reading its data. */
  private ParquetVolumeInput.Row row(PlaneVolume v, PlaneVolume.Row r) {
    if (cur == null || !r.split().equals(curSplit) || r.row() < curNext) {
      closeCurrent();
      cur = new ParquetVolumeInput(List.of(r.split()), layout, conf, times);
      curSplit = r.split();
      curNext = 0;
    }
    ParquetVolumeInput.Row row = null;
    while (curNext <= r.row()) {
      row = (ParquetVolumeInput.Row) cur.next(PageGate.UNLIMITED);
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

  /** The first row of {@code v} (its pass-through columns go to the output). */
  public ParquetVolumeInput.Row firstRow(PlaneVolume v) {
    return row(v, v.rows().get(0));
  }

  /** {@code v} read forward along D. Close it to give back its row buffer. */
  public PlaneSource open(PlaneVolume v) {
    return new Source(v);
  }

  private final class Source implements PlaneSource {
    private final PlaneVolume v;
    private final VolumeShape shape;
    private final int hw;
    private int next;
    private float[] buf;
    private long held;
    private int lo;
    private int hi;

    Source(PlaneVolume v) {
      this.v = v;
      this.shape = v.shape();
      this.hw = shape.h() * shape.w();
    }

    @Override
    public String record() {
      return "id=" + v.id();
    }

    @Override
    public VolumeShape shape() {
      return shape;
    }

    private void load() {
      PlaneVolume.Row r = v.rows().get(next++);
      long bytes = (long) shape.c() * (r.d1() - r.d0()) * hw * Float.BYTES;
      if (bytes > budget.maxRequest() || bytes / Float.BYTES > Integer.MAX_VALUE - 8) {
        throw new io.volpool.memory.MemoryBudgetException("volume " + record() + ": its row holding planes [" + r.d0()
            + ", " + r.d1() + ") is " + MemoryBudget.mib(bytes) + ", more than half of the " + MemoryBudget.mib(budget.limit())
            + " memory budget (" + MemoryBudget.SETTING + "); raise the budget, or write the volume in rows of fewer planes",
            bytes, budget.limit());
      }
      release();
      budget.forceAcquire(bytes, MemoryBudget.Use.PAGES);
      held = bytes;
      buf = new float[(int) (bytes / Float.BYTES)];
      row(v, r).copyTo(new FloatSink(buf));
      rowsRead++;
      lo = r.d0();
      hi = r.d1();
    }

    @Override
    public void read(int d0, int d1, float[] dst, int at, int channelStride) {
      int d = d0;
      while (d < d1) {
        while (buf == null || d >= hi) {
          load();
        }
        int n = Math.min(d1, hi) - d;
        for (int c = 0; c < shape.c(); c++) {
          System.arraycopy(buf, (c * (hi - lo) + d - lo) * hw, dst, c * channelStride + at + (d - d0) * hw, n * hw);
        }
        d += n;
      }
    }

    private void release() {
      if (held > 0) {
        budget.release(held, MemoryBudget.Use.PAGES);
        held = 0;
        buf = null;
      }
    }

    /** Reads the rows no output plane needed, so every row of the volume is read and counted. */
    public void finish() {
      while (next < v.rows().size()) {
        load();
      }
    }

    @Override
    public void close() {
      release();
    }
  }

  /** Reads the rest of {@code src}'s rows (those past the last plane any output reads). */
  public static void finish(PlaneSource src) {
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
    closeCurrent();
  }
}
