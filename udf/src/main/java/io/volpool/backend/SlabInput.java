package io.volpool.backend;

import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import java.nio.FloatBuffer;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * The input side of a {@link SlabRun}, the same on every backend: two host windows of input planes
 * used in turn. {@link #next} returns the window of the next slab, laid out {@code [C, planes, H, W]},
 * and starts reading the slab after it into the other window on {@code reader}, while the caller
 * runs this one. The planes two slabs share (their halo) are copied over, never read twice, and the
 * source is read forward only. Not thread-safe: one task thread drives it.
 *
 * <p>A run that keeps the halo where it computes (the GPU keeps it in device memory) asks for
 * {@linkplain #newPlanesOnly new planes only}: each window then holds just the planes the slab
 * before did not read, laid out {@code [C, planes, H, W]} from {@link #firstNew()} to the window's
 * end, so the halo is neither copied on the host nor sent to the device again.
 */
public final class SlabInput implements AutoCloseable {
  private final SlabPlan plan;
  private final PlaneSource src;
  private final PhaseTimes times;
  private final ExecutorService reader;
  private final int t;
  private final int hw;
  private final boolean newOnly;
  /** Threads that read one window, split by channel, where the source allows. */
  private final int readThreads;
  /** The first plane read into the window {@link #next} returned last (planes before it are the halo). */
  private int firstNew;
  private FloatBuffer cur;
  private FloatBuffer spare;
  /** Byte views of the two windows when they are plain memory (pinned), else null. */
  private java.nio.ByteBuffer curBytes;
  private java.nio.ByteBuffer spareBytes;
  private int heldLo;
  private int heldHi;
  private Future<?> pending;
  private int pendingFrom = -1;
  private final PhaseTimes fillTimes = new PhaseTimes();
  /**
   * Threads that read one window where the source reads channels concurrently into pinned memory,
   * unless the run says otherwise ({@link #newPlanesOnly}: the GPU backend gives each run the cores the
   * budget leaves it): one thread reads a local file into pinned memory at about 3.6 GB/s on the H200
   * machine, a slab step waits for its window, and few slab runs fit a small budget.
   */
  static final int READ_THREADS = 4;

  /**
   * Reads into windows {@code a} and {@code b}, each of at least {@link #floats(SlabPlan, int)} floats
   * (heap arrays on the CPU, pinned memory on the GPU), for slabs of {@code planes} output planes.
   */
  public SlabInput(SlabPlan plan, int planes, PlaneSource src, PhaseTimes times, ExecutorService reader, FloatBuffer a,
      FloatBuffer b) {
    this(plan, planes, src, times, reader, a, b, null, null);
  }

  /**
   * The same with little-endian byte views {@code aBytes} and {@code bBytes} of the two windows
   * (pinned memory), which sources reading files by position fill in place.
   */
  public SlabInput(SlabPlan plan, int planes, PlaneSource src, PhaseTimes times, ExecutorService reader, FloatBuffer a,
      FloatBuffer b, java.nio.ByteBuffer aBytes, java.nio.ByteBuffer bBytes) {
    this(plan, planes, src, times, reader, a, b, aBytes, bBytes, false, READ_THREADS);
  }

  /**
   * Reads into pinned windows {@code a} and {@code b} (float and byte views), each of at least
   * {@link #newFloats(SlabPlan, int)} floats, only the planes each slab adds to the last one's
   * window; the caller keeps the halo. Reads of one window are split by channel among
   * {@code readThreads} threads where the source allows.
   */
  public static SlabInput newPlanesOnly(SlabPlan plan, int planes, PlaneSource src, PhaseTimes times,
      ExecutorService reader, FloatBuffer a, FloatBuffer b, java.nio.ByteBuffer aBytes, java.nio.ByteBuffer bBytes,
      int readThreads) {
    return new SlabInput(plan, planes, src, times, reader, a, b, aBytes, bBytes, true, readThreads);
  }

  private SlabInput(SlabPlan plan, int planes, PlaneSource src, PhaseTimes times, ExecutorService reader, FloatBuffer a,
      FloatBuffer b, java.nio.ByteBuffer aBytes, java.nio.ByteBuffer bBytes, boolean newOnly, int readThreads) {
    this.plan = plan;
    this.newOnly = newOnly;
    this.readThreads = Math.max(1, readThreads);
    this.src = src;
    this.times = times;
    this.reader = reader;
    this.t = planes;
    VolumeShape in = plan.input();
    this.hw = in.h() * in.w();
    long n = newOnly ? newFloats(plan, planes) : floats(plan, planes);
    if (a.capacity() < n || b.capacity() < n) {
      throw new IllegalArgumentException("slab windows of " + a.capacity() + " and " + b.capacity() + " floats; slabs of "
          + planes + " output planes need " + n);
    }
    this.cur = a;
    this.spare = b;
    this.curBytes = aBytes;
    this.spareBytes = bBytes;
  }

  /** Floats one window holds for slabs of {@code planes} output planes (two are held). */
  public static long floats(SlabPlan plan, int planes) {
    return io.volpool.op.Slab.floats(plan.input(), plan.widestInput(0, Math.min(planes, plan.output().d())));
  }

  /** Floats one window holds for slabs of {@code planes} output planes when it holds new planes only. */
  public static long newFloats(SlabPlan plan, int planes) {
    return io.volpool.op.Slab.floats(plan.input(), plan.mostNewPlanes(planes));
  }

  /**
   * The first input plane that the window {@link #next} returned last holds when reading new planes
   * only: the window's planes from here to its end were read; those before it are the halo, which
   * the last window held.
   */
  public int firstNew() {
    return firstNew;
  }

  /** The record being read, for messages. */
  public String record() {
    return src.record();
  }

  /** The output plane after the last slab read (the volume's end unless a range ends sooner). */
  private int end = -1;

  /** Reads no further than the slabs of output planes before {@code to} (a slab range's end). */
  public SlabInput until(int to) {
    this.end = to;
    return this;
  }

  /**
   * The input window of the slab of output planes {@code [o0, min(o0 + planes, D'))}, holding input
   * planes {@code plan.inputPlanes(...)}; valid until the next call. Slabs must come in order.
   */
  public FloatBuffer next(int o0) {
    int od = end >= 0 ? end : plan.output().d();
    if (pending != null && pendingFrom == o0) {
      await();
    } else {
      cancel();
      fill(o0, times);
    }
    int o1 = Math.min(od, o0 + t);
    int[] window = plan.inputPlanes(o0, o1);
    // what fill() read for this window: from the end of the window held before it
    firstNew = firstRead(heldHi, window[0], window[1]);
    FloatBuffer swap = cur;
    cur = spare;
    spare = swap;
    java.nio.ByteBuffer swapBytes = curBytes;
    curBytes = spareBytes;
    spareBytes = swapBytes;
    heldLo = window[0];
    heldHi = window[1];
    if (o1 < od) {
      pendingFrom = o1;
      pending = reader.submit(() -> fill(o1, fillTimes));
    }
    return cur;
  }

  /**
   * Puts the input window of the slab starting at output plane {@code from} into {@code spare}: the
   * planes it shares with the window in {@code cur} copied over, the rest read from the source.
   * Reads {@code cur} only, so it runs beside the work on {@code cur}.
   */
  private void fill(int from, PhaseTimes into) {
    int[] w = plan.inputPlanes(from, Math.min(plan.output().d(), from + t));
    int a = w[0];
    int b = w[1];
    int c = plan.input().c();
    long r0 = System.nanoTime();
    int parts = spareBytes != null && src.concurrentChannels() ? Math.min(c, readThreads) : 1;
    if (parts == 1) {
      fillChannels(0, c, a, b, false);
    } else {
      // channels split among threads: each copies its channels' halo and reads their new planes
      java.util.List<Future<?>> others = new java.util.ArrayList<>();
      for (int p = 1; p < parts; p++) {
        int c0 = p * c / parts;
        int c1 = (p + 1) * c / parts;
        others.add(reader.submit(() -> fillChannels(c0, c1, a, b, true)));
      }
      RuntimeException first = null;
      try {
        fillChannels(0, c / parts, a, b, true);
      } catch (RuntimeException e) {
        first = e;
      }
      for (Future<?> f : others) {
        try {
          get(f);
        } catch (RuntimeException e) {
          first = first == null ? e : first;
        }
      }
      if (first != null) {
        throw first;
      }
    }
    if (Math.max(heldHi, a) < b) {
      into.add(Phase.READ, System.nanoTime() - r0);
    }
  }

  /**
   * The first plane of window {@code [a, b)} that a new-planes-only fill reads, when the window held
   * before it ends at {@code heldHi}: the planes before it are the halo ({@code b} when there are none).
   */
  private static int firstRead(int heldHi, int a, int b) {
    return Math.min(b, Math.max(heldHi, a));
  }

  /** Channels {@code [c0, c1)} of the window {@code [a, b)}: the halo copied from {@code cur}, the rest read. */
  private void fillChannels(int c0, int c1, int a, int b, boolean byChannels) {
    if (newOnly) {
      // only the planes after the held window, packed from index 0: the caller keeps the halo
      int read = firstRead(heldHi, a, b);
      if (read < b) {
        int stride = (b - read) * hw;
        if (byChannels) {
          src.readChannels(c0, c1, read, b, spareBytes, 0, stride);
        } else {
          src.read(read, b, spareBytes, 0, stride);
        }
      }
      return;
    }
    int stride = (b - a) * hw;
    int keepLo = Math.max(a, heldLo);
    if (keepLo < heldHi) {
      for (int c = c0; c < c1; c++) {
        spare.put(c * stride + (keepLo - a) * hw, cur, c * (heldHi - heldLo) * hw + (keepLo - heldLo) * hw,
            (heldHi - keepLo) * hw);
      }
    }
    int read = Math.max(heldHi, a);
    if (read < b) {
      if (byChannels) {
        src.readChannels(c0, c1, read, b, spareBytes, (read - a) * hw, stride);
      } else if (spareBytes != null) {
        src.read(read, b, spareBytes, (read - a) * hw, stride);
      } else {
        src.read(read, b, spare, (read - a) * hw, stride);
      }
    }
  }

  /**
   * Waits for {@code f}, rethrowing what it threw; through interrupts, since the read writes into a
   * window (pinned memory) that is freed once this input is closed.
   */
  private void get(Future<?> f) {
    Waits.done(f, "reading the next slab of " + src.record());
  }

  private void await() {
    Future<?> f = pending;
    pending = null;
    pendingFrom = -1;
    try {
      get(f);
    } finally {
      fillTimes.moveTo(times);
    }
  }

  /** Waits out a read-ahead nobody will use (its failure is no longer news). */
  private void cancel() {
    if (pending != null) {
      try {
        await();
      } catch (RuntimeException | Error e) {
        // the run is over or moved on
      }
    }
  }

  /** Waits for the read-ahead and drops the windows; safe to call twice. */
  @Override
  public void close() {
    cancel();
    cur = null;
    spare = null;
  }
}
