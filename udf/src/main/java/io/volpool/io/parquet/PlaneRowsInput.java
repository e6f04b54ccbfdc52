package io.volpool.io.parquet;

import io.volpool.io.CorruptInputException;
import io.volpool.io.PageGate;
import io.volpool.io.PlaneVolume;
import io.volpool.io.VolumeSource;

import io.volpool.backend.BufferSink;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.memory.MemoryBudgetException;
import io.volpool.op.VolumeShape;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;

/**
 * Reads the volumes of a task that are stored across rows, each as a {@link PlaneSource}: its rows
 * in plane order, wherever the driver found them. A row is read with the same reader as whole-volume
 * rows (so every codec and page kind works) and must still be what the driver planned (id and
 * planes); else the input changed under the job. Two ways, chosen once a volume from its first row:
 * <ul>
 *   <li>rows in local files or on HDFS whose value is stored plainly (uncompressed PLAIN) are read by
 *       position ({@link PositionedRows}): each slab window's planes go from the file straight into the
 *       window (pinned memory on the GPU), with no row in memory;
 *   <li>other rows (compressed, or on HDFS or S3) are read whole, one at a time, while the next is
 *       read on a thread of its own ({@link Source}): at most two rows in memory, in two buffers
 *       reused from row to row and counted in the memory budget while they exist.
 * </ul>
 */
public final class PlaneRowsInput implements io.volpool.io.SlabbedInput<PlaneVolume> {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(PlaneRowsInput.class);
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
  /** The rows' files' footers, each parsed once: every row is a split (row group) of its own. */
  private final FooterCache footers = new FooterCache();
  private ParquetSplit curSplit;
  private long curNext;
  /** The plan's row that {@link #row} returned last, and the reader's row for it. */
  private PlaneVolume.Row lastRef;
  private ParquetVolumeInput.Row lastRow;
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
   * The row {@code r} of the plan, positioned for reading its data (the row returned last again, while
   * its data is unread). One thread at a time: the task thread between volumes and before a volume's
   * read-ahead starts, else the read-ahead thread, or a slab reader under {@link PositionedRows}'s lock.
   * Its time goes to {@code aheadTimes}, moved to the task's times when no read-ahead runs.
   */
  private ParquetVolumeInput.Row row(PlaneVolume v, PlaneVolume.Row r) {
    if (r.equals(lastRef) && !lastRow.consumed()) {
      return lastRow;
    }
    PhaseTimes t = aheadTimes;
    if (cur == null || !r.split().equals(curSplit) || r.row() < curNext) {
      closeCurrent();
      cur = new ParquetVolumeInput(List.of(r.split()), layout, rescale, conf, t, footers);
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
    lastRef = r;
    lastRow = row;
    return row;
  }

  /** The first row of {@code v} (its pass-through columns go to the output). Call between volumes. */
  @Override
  public ParquetVolumeInput.Row first(PlaneVolume v) {
    ParquetVolumeInput.Row first = row(v, v.firstRow());
    aheadTimes.moveTo(times);
    return first;
  }

  /**
   * Read by position: one row of {@code v}'s largest, for a row found not stored plainly after all
   * (read whole; none is, in a volume written alike). Else two: one being read, one read ahead.
   */
  @Override
  public long heldBytes(PlaneVolume v) {
    return (positioned(v) ? 1 : 2) * rowBytes(v);
  }

  /** The float32 bytes of {@code v}'s largest row. */
  private static long rowBytes(PlaneVolume v) {
    return v.rows().stream().mapToLong(r -> (long) (r.d1() - r.d0())).max().orElse(1)
        * v.shape().c() * v.shape().h() * v.shape().w() * Float.BYTES;
  }

  /**
   * Whether {@code v}'s rows are read by position: its rows are in local files or on HDFS and its first row's
   * value is stored plainly (uncompressed PLAIN; the rows of one volume are written alike). Decided
   * once a volume, from its first row (kept for {@link #first}).
   */
  private boolean positioned(PlaneVolume v) {
    if (v != peeked) {
      boolean byPosition = true;
      try {
        for (PlaneVolume.Row r : v.rows()) {
          byPosition &= io.volpool.io.ByteSource.readsByPosition(new org.apache.hadoop.fs.Path(r.split().path()), conf);
        }
      } catch (java.io.IOException e) {
        byPosition = false;
      }
      ParquetVolumeInput.Row first = byPosition ? row(v, v.firstRow()) : null;
      peekedPositioned = byPosition && first.plainValueAt() >= 0;
      peekedPlain = byPosition && first.valueType().isFloat32() && first.rescale().isIdentity();
      aheadTimes.moveTo(times);
      peeked = v;
    }
    return peekedPositioned;
  }

  private PlaneVolume peeked;
  private boolean peekedPositioned;
  /** Whether the first row of {@link #peeked} holds little-endian float32 with no rescale. */
  private boolean peekedPlain;

  /** {@code v} read forward along D. Close it to give back its row buffers. */
  @Override
  public PlaneSource open(PlaneVolume v) {
    if (positioned(v)) {
      LOG.info("volume {}: its {} rows are read by position, {}", v.record(), v.rows().size(), peekedPlain
          ? "the channels of a slab on several threads" : "widened on the way");
      return new PositionedRows(v);
    }
    LOG.info("volume {}: its {} rows are read whole, one ahead (rows read by position must be uncompressed PLAIN values"
        + " in local files or on HDFS)", v.record(), v.rows().size());
    if (ahead == null) {
      ahead = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "volpool-rows-ahead");
        t.setDaemon(true);
        return t;
      });
    }
    return new Source(v);
  }

  /** Counts row {@code r} of {@code v} read, {@code stored} bytes: a row in the halo of two ranges by the first only. */
  private void count(PlaneVolume v, PlaneVolume.Row r, long stored) {
    if (v.owns(r)) {
      rowsRead.incrementAndGet();
      storedRead.addAndGet(stored);
    }
  }

  /** Fails unless the rows planned for {@code v} (this task's) hold planes {@code [d0, d1)}. */
  private static void checkPlanned(PlaneVolume v, int d0, int d1) {
    PlaneVolume.Row firstListed = v.rows().get(0);
    PlaneVolume.Row lastListed = v.rows().get(v.rows().size() - 1);
    if (d0 < firstListed.d0() || d1 > lastListed.d1()) {
      throw new IllegalStateException(v.record() + ": input planes [" + d0 + ", " + d1 + ") asked for, but the rows planned"
          + " for this task hold [" + firstListed.d0() + ", " + lastListed.d1() + ")");
    }
  }

  /** Waits for {@code f} (through interrupts: it writes into a buffer freed after), rethrowing what it threw. */
  private static <T> T join(Future<T> f, String record) {
    return io.volpool.backend.Waits.done(f, "reading a row of " + record);
  }

  /**
   * Memory for one row's planes as float32: a direct buffer (a local file's value lands in it with
   * one copy by the kernel), or a float array for a row of more than 2 GiB as float32 (a narrow type
   * widened), which no buffer holds. Counted in the budget from allocation until {@link #free}.
   */
  private final class RowMemory {
    final long bytes;
    final java.nio.ByteBuffer direct;
    final float[] heap;

    RowMemory(long bytes, String record, String rowPlanes) {
      if (bytes > budget.maxRequest()) {
        throw new MemoryBudgetException("volume " + record + ": its row holding planes " + rowPlanes + " is "
            + MemoryBudget.mib(bytes) + " as float32, more than half of the " + MemoryBudget.mib(budget.limit())
            + " memory budget (" + MemoryBudget.SETTING + "); raise the budget, or write the volume in rows of fewer"
            + " planes (or uncompressed and without a dictionary, in local files or on HDFS: such rows are read by"
            + " position, not whole)", bytes,
            budget.limit());
      }
      if (bytes / Float.BYTES > Integer.MAX_VALUE - 8) {
        throw new MemoryBudgetException("volume " + record + ": its row holding planes " + rowPlanes + " is "
            + MemoryBudget.mib(bytes) + " as float32, more than one Java array holds; write the volume in rows of"
            + " fewer planes", bytes, budget.limit());
      }
      this.bytes = bytes;
      budget.forceAcquire(bytes, MemoryBudget.Use.PAGES);
      try {
        if (bytes <= Integer.MAX_VALUE - 8) {
          direct = java.nio.ByteBuffer.allocateDirect((int) bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
          heap = null;
        } else {
          direct = null;
          heap = new float[(int) (bytes / Float.BYTES)];
        }
      } catch (OutOfMemoryError e) {
        budget.release(bytes, MemoryBudget.Use.PAGES);
        throw e;
      }
    }

    /** A sink writing {@code n} bytes of float32 from the start. */
    io.volpool.backend.VolumeSink sink(long n) {
      if (direct != null) {
        return new BufferSink(direct.clear().limit((int) n));
      }
      return new io.volpool.backend.FloatSink(heap);
    }

    /** Copies {@code n} floats from float index {@code from} to index {@code to} of {@code dst}. */
    private void copyTo(int from, java.nio.FloatBuffer dst, int to, int n) {
      if (direct != null) {
        dst.put(to, direct.asFloatBuffer(), from, n);
      } else {
        dst.put(to, heap, from, n);
      }
    }

    /** Copies {@code n} floats from float index {@code from} to float index {@code to} of little-endian {@code dst}. */
    private void copyTo(int from, java.nio.ByteBuffer dst, int to, int n) {
      if (direct != null) {
        dst.put(to * Float.BYTES, direct, from * Float.BYTES, n * Float.BYTES);
      } else {
        dst.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(to, heap, from, n);
      }
    }

    /**
     * Copies planes {@code [a, b)} of channels {@code [c0, c1)} of the row held here ({@code [C, rowD, H, W]},
     * {@code hw} values a plane) into {@code dst}: channel {@code c}'s from index {@code c * stride + at}.
     */
    void planesTo(int rowD, int hw, int a, int b, int c0, int c1, java.nio.FloatBuffer dst, int at, int stride) {
      for (int c = c0; c < c1; c++) {
        copyTo((c * rowD + a) * hw, dst, c * stride + at, (b - a) * hw);
      }
    }

    /** {@link #planesTo(int, int, int, int, int, int, java.nio.FloatBuffer, int, int)} into little-endian bytes. */
    void planesTo(int rowD, int hw, int a, int b, int c0, int c1, java.nio.ByteBuffer dst, int at, int stride) {
      for (int c = c0; c < c1; c++) {
        copyTo((c * rowD + a) * hw, dst, c * stride + at, (b - a) * hw);
      }
    }

    /** Gives the memory back: only once no thread reads or writes it any more. */
    void free() {
      io.volpool.memory.DirectBuffers.free(direct);
      budget.release(bytes, MemoryBudget.Use.PAGES);
    }
  }

  /** One row's planes {@code [lo, hi)} in memory, channel by channel. */
  private record Loaded(RowMemory mem, int lo, int hi) {}

  /** Copies planes {@code [a, b)} of every channel of a row of depth {@code rowD} into a window, from index {@code to} past its start. */
  private interface Copy {
    void copy(RowMemory row, int rowD, int a, int b, int to);
  }

  private final class Source implements PlaneSource {
    private final PlaneVolume v;
    private final VolumeShape shape;
    private final int hw;
    /** The bytes of the volume's largest row: the size of each row buffer. */
    private final long rowBytes;
    /** Row buffers not holding a row, shared with the read-ahead thread. */
    private final java.util.ArrayDeque<RowMemory> idle = new java.util.ArrayDeque<>();
    /** Row buffers allocated (and counted in the budget) for this volume. */
    private final List<RowMemory> made = new java.util.ArrayList<>();
    private int next;
    private Loaded row;
    private Future<Loaded> pending;

    Source(PlaneVolume v) {
      this.v = v;
      this.shape = v.shape();
      this.hw = shape.h() * shape.w();
      this.rowBytes = rowBytes(v);
    }

    @Override
    public String record() {
      return v.record();
    }

    @Override
    public VolumeShape shape() {
      return shape;
    }

    /** An idle row buffer, or a new one (at most two: one read, one read ahead). */
    private RowMemory buffer(PlaneVolume.Row r) {
      synchronized (idle) {
        RowMemory b = idle.poll();
        if (b == null) {
          b = new RowMemory(rowBytes, record(), "[" + r.d0() + ", " + r.d1() + ")");
          made.add(b);
        }
        return b;
      }
    }

    private void giveBack(RowMemory b) {
      synchronized (idle) {
        idle.push(b);
      }
    }

    /** Reads row {@code i} of the volume (on the read-ahead thread, or this one before it starts). */
    private Loaded load(int i) {
      PlaneVolume.Row r = v.rows().get(i);
      long bytes = (long) shape.c() * (r.d1() - r.d0()) * hw * Float.BYTES;
      RowMemory buf = buffer(r);
      try {
        VolumeSource src = row(v, r);
        src.copyTo(buf.sink(bytes));
        count(v, r, src.storedBytes());
        return new Loaded(buf, r.d0(), r.d1());
      } catch (RuntimeException | Error e) {
        giveBack(buf);
        throw e;
      }
    }

    /** Makes the next row current and starts reading the one after it. */
    private void advance() {
      Loaded l;
      if (pending != null) {
        l = join(pending, record());
        pending = null;
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

    @Override
    public void read(int d0, int d1, java.nio.FloatBuffer dst, int at, int channelStride) {
      copy(d0, d1, (mem, rowD, a, b, to) -> mem.planesTo(rowD, hw, a, b, 0, shape.c(), dst, at + to, channelStride));
    }

    @Override
    public void read(int d0, int d1, java.nio.ByteBuffer dst, int at, int channelStride) {
      copy(d0, d1, (mem, rowD, a, b, to) -> mem.planesTo(rowD, hw, a, b, 0, shape.c(), dst, at + to, channelStride));
    }

    private void copy(int d0, int d1, Copy into) {
      checkPlanned(v, d0, d1);
      int d = d0;
      while (d < d1) {
        while (row == null || d >= row.hi()) {
          advance();
        }
        int n = Math.min(d1, row.hi()) - d;
        into.copy(row.mem(), row.hi() - row.lo(), d - row.lo(), d - row.lo() + n, (d - d0) * hw);
        d += n;
      }
    }

    private void release(Loaded l) {
      if (l != null) {
        giveBack(l.mem());
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
          release(join(pending, record()));
        } catch (RuntimeException | Error e) {
          // the volume already failed or finished; its read-ahead's error is not news
        }
        pending = null;
      }
      release(row);
      row = null;
      synchronized (idle) {
        // the read-ahead is done (joined through interrupts), and the slab reader waited for its reads
        made.forEach(RowMemory::free);
        made.clear();
        idle.clear();
      }
      aheadTimes.moveTo(times);
    }
  }

  /** Reads the rest of {@code src}'s rows (those past the last plane any output reads). */
  @Override
  public void finish(PlaneSource src) {
    if (src instanceof PositionedRows p) {
      p.finish();
    } else {
      ((Source) src).finish();
    }
  }

  /**
   * A volume whose rows are read by position: each slab window's planes go from the file straight to
   * the window (pinned memory on the GPU), one copy by the kernel, the channels on several threads
   * when the values are little-endian float32 (narrower types are widened on the way, by one thread).
   * The rows are opened (checked against the plan and counted) in order as windows reach them, on
   * another handle of their file, so the row reader's stream position stays its own. A row stored
   * otherwise after all (compressed in a volume whose first row was not) is read whole into memory,
   * within the one row {@link #heldBytes} keeps aside.
   */
  private final class PositionedRows implements PlaneSource {
    private final PlaneVolume v;
    private final VolumeShape shape;
    private final int hw;
    /** Whether every row's channels may be read on several threads at once (little-endian float32). */
    private final boolean concurrent;
    /** Rows opened and not yet passed, in plane order. */
    private final java.util.ArrayDeque<Opened> open = new java.util.ArrayDeque<>();
    private int next;
    /** Handles on the files of the open rows, by path: one a file, closed when its last open row is passed. */
    private final java.util.Map<String, io.volpool.io.ByteSource> files = new java.util.HashMap<>();
    /** Reads in flight (row memory is freed only when none is). */
    private int reading;
    /** What opening a row threw: every later read of the volume throws it too. */
    private RuntimeException failed;
    /** Closed: a read still under way opens no row again (nor a file into the cleared map). */
    private boolean closed;

    /** After {@link #positioned} said yes for {@code v}. */
    PositionedRows(PlaneVolume v) {
      this.v = v;
      this.shape = v.shape();
      this.hw = shape.h() * shape.w();
      this.concurrent = peekedPlain;
    }

    @Override
    public String record() {
      return v.record();
    }

    @Override
    public VolumeShape shape() {
      return shape;
    }

    @Override
    public boolean concurrentChannels() {
      return concurrent;
    }

    /**
     * Starts a read of planes {@code [d0, d1)}: checked against the plan, the row of {@code d0} opened, the
     * rows before it passed (after the opening, so that a file whose rows go on stays open); that row, or
     * null for an empty read.
     */
    private synchronized Opened begin(int d0, int d1) {
      if (failed != null) {
        throw failed;
      }
      checkPlanned(v, d0, d1);
      if (d0 >= d1) {
        return null;
      }
      Opened first = rowAt(d0);
      pass(d0);
      reading++;
      return first;
    }

    /**
     * The open row that holds plane {@code d}, opening rows up to it. Called once a row by each thread
     * that reads a slab's channels: the first to need a row opens it while the others still read the
     * row before (opening every row of a slab before any read made the slab's read wait for them all:
     * on the H100, a range's read threads spent 13 of their 38 busy task-s waiting on each other here).
     */
    private synchronized Opened rowAt(int d) {
      if (failed != null) {
        throw failed;
      }
      if (closed) {
        throw new IllegalStateException("planes of " + record() + " read after its rows were closed");
      }
      while (open.isEmpty() || open.peekLast().hi() <= d) {
        openNext();
      }
      for (Opened o : open) {
        if (o.lo() <= d && d < o.hi()) {
          return o;
        }
      }
      throw new IllegalStateException("plane " + d + " of " + record() + " is in no open row (passed already)");
    }

    private synchronized void done() {
      reading--;
    }

    /** Closes the open rows that end at or before plane {@code d} (no later read needs them). */
    private void pass(int d) {
      while (!open.isEmpty() && open.peekFirst().hi() <= d) {
        Opened o = open.pollFirst();
        o.planes().close();
        if (open.stream().noneMatch(x -> x.path().equals(o.path()))) {
          close(files.remove(o.path()));
        }
      }
    }

    /** Opens the next row of the volume: checked against the plan, counted, positioned (or read whole). */
    private void openNext() {
      PlaneVolume.Row r = v.rows().get(next);
      try {
        ParquetVolumeInput.Row row = row(v, r);
        long stored = row.storedBytes();
        String path = r.split().path();
        io.volpool.io.ByteSource file = files.get(path);
        if (file == null) {
          try {
            file = io.volpool.io.ByteSource.open(new org.apache.hadoop.fs.Path(path), conf);
          } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("opening " + path + " to read the planes of " + record() + ": "
                + e.getMessage(), e);
          }
          files.put(path, file);
        }
        boolean plain = row.valueType().isFloat32() && row.rescale().isIdentity();
        PlaneSource planes = concurrent && !plain ? null : row.positionedRow(file);
        if (planes == null) {
          planes = new WholeRow(row, r);
        }
        next++;
        count(v, r, stored);
        open.addLast(new Opened(r.d0(), r.d1(), path, planes));
      } catch (RuntimeException e) {
        failed = e;
        throw e;
      }
    }

    /**
     * Reads the planes of every row from {@code d0} to {@code d1} that {@code part} reads into the window,
     * row by row, each opened when first needed.
     */
    private void each(int d0, int d1, RowRead part) {
      Opened o = begin(d0, d1);
      if (o == null) {
        return;
      }
      try {
        for (int d = d0; d < d1; ) {
          if (d >= o.hi()) {
            o = rowAt(d);
          }
          int b = Math.min(d1, o.hi());
          part.read(o, d - o.lo(), b - o.lo(), (d - d0) * hw);
          d = b;
        }
      } finally {
        done();
      }
    }

    @Override
    public void read(int d0, int d1, java.nio.FloatBuffer dst, int at, int channelStride) {
      each(d0, d1, (o, a, b, off) -> o.planes().read(a, b, dst, at + off, channelStride));
    }

    @Override
    public void read(int d0, int d1, java.nio.ByteBuffer dst, int at, int channelStride) {
      each(d0, d1, (o, a, b, off) -> o.planes().read(a, b, dst, at + off, channelStride));
    }

    @Override
    public void readChannels(int c0, int c1, int d0, int d1, java.nio.ByteBuffer dst, int at, int channelStride) {
      each(d0, d1, (o, a, b, off) -> o.planes().readChannels(c0, c1, a, b, dst, at + off, channelStride));
    }

    /** Opens the rows no output plane needed, one at a time, so every row of the volume is checked and counted. */
    synchronized void finish() {
      while (next < v.rows().size()) {
        openNext();
        pass(open.peekLast().hi());
      }
    }

    private void close(io.volpool.io.ByteSource file) {
      if (file != null) {
        try {
          file.close();
        } catch (java.io.IOException e) {
          // read-only: nothing is lost
        }
      }
    }

    @Override
    public synchronized void close() {
      closed = true;
      // the slab reader waited for its reads (through interrupts); a read still in flight keeps its row's memory
      for (Opened o : open) {
        if (o.planes() instanceof WholeRow w && reading > 0) {
          w.drop();
        } else {
          o.planes().close();
        }
      }
      open.clear();
      files.values().forEach(this::close);
      files.clear();
      aheadTimes.moveTo(times);
    }
  }

  /** One row's planes {@code [lo, hi)} (in file {@code path}), read from {@code planes} in the row's own plane numbers. */
  private record Opened(int lo, int hi, String path, PlaneSource planes) {}

  /** Reads row {@code o}'s own planes {@code [a, b)} into the window from float index {@code off} (past {@code at}). */
  private interface RowRead {
    void read(Opened o, int a, int b, int off);
  }

  /**
   * A row read whole into memory and handed out plane by plane: a row of a positioned volume that is
   * not stored plainly after all.
   */
  private final class WholeRow implements PlaneSource {
    private final String record;
    private final VolumeShape shape;
    private final int hw;
    private RowMemory mem;

    WholeRow(ParquetVolumeInput.Row row, PlaneVolume.Row r) {
      this.record = row.record();
      this.shape = row.shape();
      this.hw = shape.h() * shape.w();
      this.mem = new RowMemory(shape.numel() * Float.BYTES, record, "[" + r.d0() + ", " + r.d1() + ")");
      try {
        row.copyTo(mem.sink(shape.numel() * Float.BYTES));
      } catch (RuntimeException | Error e) {
        close();
        throw e;
      }
    }

    @Override
    public String record() {
      return record;
    }

    @Override
    public VolumeShape shape() {
      return shape;
    }

    @Override
    public void read(int d0, int d1, java.nio.FloatBuffer dst, int at, int channelStride) {
      mem.planesTo(shape.d(), hw, d0, d1, 0, shape.c(), dst, at, channelStride);
    }

    @Override
    public void readChannels(int c0, int c1, int d0, int d1, java.nio.ByteBuffer dst, int at, int channelStride) {
      mem.planesTo(shape.d(), hw, d0, d1, c0, c1, dst, at, channelStride);
    }

    @Override
    public void read(int d0, int d1, java.nio.ByteBuffer dst, int at, int channelStride) {
      readChannels(0, shape.c(), d0, d1, dst, at, channelStride);
    }

    @Override
    public boolean concurrentChannels() {
      return true;
    }

    /** Gives the budget back but leaves the memory to the collector: a reader may still be copying from it. */
    void drop() {
      if (mem != null) {
        budget.release(mem.bytes, MemoryBudget.Use.PAGES);
        mem = null;
      }
    }

    @Override
    public void close() {
      if (mem != null) {
        mem.free();
        mem = null;
      }
    }
  }

  private void closeCurrent() {
    if (cur != null) {
      cur.close();
      cur = null;
      curSplit = null;
      lastRef = null;
      lastRow = null;
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
