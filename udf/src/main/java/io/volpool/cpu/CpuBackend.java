package io.volpool.cpu;

import io.volpool.backend.Backend;
import io.volpool.backend.Batch;
import io.volpool.backend.BatchExecutor;
import io.volpool.backend.FloatSink;
import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSink;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.VolumeSink;
import io.volpool.memory.BufferPool;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedOp;
import io.volpool.op.Pipeline;
import io.volpool.op.Slab;
import io.volpool.op.SlabPlan;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.ForkJoinPool;

/**
 * The CPU backend: runs each stage of a pipeline over the whole batch with {@link VolumeKernels}.
 * Readers write volumes straight into the batch's first float array (converted from little-endian
 * bytes on the way in); the last stage's floats are written to a byte buffer with the caller's gap
 * before each volume. Owns the thread pool of the fast kernels and a pool of batch buffers counted
 * against the memory budget; one instance per JVM, closed by {@link io.volpool.backend.Backends}.
 */
public final class CpuBackend implements Backend {
  /** Target bytes of the largest per-stage array of one batch when the user sets no batch size. */
  static final long AUTO_BATCH_BYTES = 64L << 20;

  private final VolumeKernels kernels;
  private final ForkJoinPool pool;
  private final String name;
  private final BufferPool<Layout, Buffers> buffers;
  /** Reads the next slab of slabbed runs while the kernels work on the current one. */
  private final java.util.concurrent.ExecutorService slabReader = java.util.concurrent.Executors.newCachedThreadPool(r -> {
    Thread th = new Thread(r, "volpool-slab-reader");
    th.setDaemon(true);
    return th;
  });

  /** The arrays of one batch: one float array per pipeline shape, and the output bytes. */
  private record Layout(List<Long> floats, long outBytes) {
    long bytes() {
      return floats.stream().mapToLong(f -> f * Float.BYTES).sum() + outBytes;
    }
  }

  private record Buffers(float[][] arrays, ByteBuffer out) {}

  private CpuBackend(VolumeKernels kernels, ForkJoinPool pool, String name, MemoryBudget budget) {
    this.kernels = kernels;
    this.pool = pool;
    this.name = name;
    this.buffers = new BufferPool<>(budget, new BufferPool.Allocator<>() {
      @Override
      public long bytes(Layout key) {
        return key.bytes();
      }

      @Override
      public Buffers allocate(Layout key) {
        float[][] a = new float[key.floats().size()][];
        for (int i = 0; i < a.length; i++) {
          a[i] = new float[Math.toIntExact(key.floats().get(i))];
        }
        return new Buffers(a, ByteBuffer.allocate(Math.toIntExact(key.outBytes())).order(ByteOrder.LITTLE_ENDIAN));
      }

      @Override
      public void free(Buffers b) {
        // heap: the collector takes it
      }
    });
  }

  /** The fast multi-threaded backend; {@code threads <= 0} means one thread per available core. */
  public static CpuBackend fast(int threads, MemoryBudget budget) {
    int t = threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
    ForkJoinPool pool = new ForkJoinPool(t);
    return new CpuBackend(new FastKernels(pool), pool, "cpu (" + t + " threads)", budget);
  }

  /** The fast backend with a budget of its own (tests and tools). */
  public static CpuBackend fast(int threads) {
    return fast(threads, new MemoryBudget(MemoryBudget.defaultLimit()));
  }

  /** The plain float64 reference backend (single-threaded, slow): for checking, not for production. */
  public static CpuBackend reference() {
    return new CpuBackend(new ReferenceKernels(), null, "cpu-reference", new MemoryBudget(MemoryBudget.defaultLimit()));
  }

  @Override
  public String name(int device) {
    return name;
  }

  @Override
  public int deviceCount() {
    return 1;
  }

  @Override
  public int suggestBatch(Pipeline pipeline, VolumeShape input, int device) {
    long largest = pipeline.shapes(input).stream().mapToLong(VolumeShape::bytes).max().orElse(input.bytes());
    return (int) Math.max(1, Math.min(1024, AUTO_BATCH_BYTES / largest));
  }

  @Override
  public BatchExecutor open(Pipeline pipeline, VolumeShape input, int maxBatch, int device, int outputGap) {
    return new Executor(pipeline, input, maxBatch, outputGap);
  }

  @Override
  public void close() {
    slabReader.shutdownNow();
    buffers.close();
    if (pool != null) {
      pool.shutdown();
    }
  }

  /** Runs all stages of {@code pipeline} on {@code n} volumes of {@code x} (convenience for tests and tools). */
  public float[] run(Pipeline pipeline, VolumeShape input, float[] x, int n) {
    float[] cur = x;
    VolumeShape s = input;
    for (Stage st : pipeline.stages()) {
      VolumeShape o = st.outputShape(s);
      float[] next = new float[Math.toIntExact(n * o.numel())];
      apply(st, s, cur, n, next);
      cur = next;
      s = o;
    }
    return cur;
  }

  private void apply(Stage st, VolumeShape in, float[] x, int n, float[] y) {
    apply(st, in, Slab.whole(in, st.outputShape(in)), x, n, y);
  }

  private void apply(Stage st, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    if (st instanceof FusedOp f) {
      kernels.fused(f, in, slab, x, n, y);
    } else if (st instanceof AvgPool3dSpec a) {
      kernels.avgPool3d(a, in, slab, x, n, y);
    } else {
      throw new IllegalStateException("no CPU kernel for stage " + st.name());
    }
  }

  /** Host bytes a batch of {@code n} volumes of {@code in} holds on this backend (see {@link BatchExecutor#batchBytes()}). */
  public static long batchBytes(Pipeline pipeline, VolumeShape in, int n, int gap) {
    List<VolumeShape> shapes = pipeline.shapes(in);
    VolumeShape o = shapes.get(shapes.size() - 1);
    long floats = pipeline.stages().isEmpty() ? 0 : shapes.stream().mapToLong(VolumeShape::numel).sum() * n;
    return floats * Float.BYTES + n * (gap + o.bytes());
  }

  /** Host bytes {@link #runSlabs} holds for slabs of {@code planes} output planes. */
  public static long slabBytes(SlabPlan plan, int planes) {
    int t = Math.min(planes, plan.output().d());
    long floats = Slab.floats(plan.input(), plan.widestInput(0, t)) + Slab.floats(plan.output(), t);
    for (int i = 0; i < plan.pipeline().stages().size(); i++) {
      floats += Slab.floats(plan.shape(i), plan.widestInput(i, t));
    }
    return floats * Float.BYTES;
  }

  /** The most output planes per slab whose buffers ({@link #slabBytes}) fit {@code bytes}; at least 1. */
  public static int slabPlanes(SlabPlan plan, long bytes) {
    int lo = 1;
    int hi = plan.output().d();
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (slabBytes(plan, mid) <= bytes) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /**
   * Runs {@code plan} over the one volume of {@code src} in slabs of {@code planes} output planes
   * and hands each slab's output to {@code dst}, in order (see {@link SlabRun}).
   */
  public void runSlabs(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times) {
    try (SlabRun run = startSlabs(plan, planes, src, dst, times)) {
      while (run.step()) {
        // each step hands one slab to dst
      }
    }
  }

  /**
   * Starts a slabbed run; the caller drives it with {@link SlabRun#step()} and closes it. The
   * buffers ({@link #slabBytes}) are taken from the memory budget, waiting for room: call it
   * holding no other batch.
   */
  public SlabRun startSlabs(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times) {
    return new SlabRun(plan, planes, src, dst, times);
  }

  /**
   * One volume through a pipeline in slabs along D. Each step reads the planes the next slab's
   * outputs need, halo included (the planes it shares with the last slab are moved over, not read
   * again), runs every stage on its window and hands the output planes to the sink.
   */
  public final class SlabRun implements AutoCloseable {
    private final SlabPlan plan;
    private final PlaneSource src;
    private final PlaneSink dst;
    private final PhaseTimes times;
    private final int t;
    private final long bytes;
    private final int hw;
    private float[] cur;
    private float[] spare;
    private final float[][] mid;
    private final float[] out;
    private int heldLo;
    private int heldHi;
    private int o0;
    private boolean closed;
    /** Filling {@code spare} with the next slab's window while this slab's kernels run, or null. */
    private java.util.concurrent.Future<?> pendingFill;
    private final PhaseTimes fillTimes = new PhaseTimes();

    SlabRun(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times) {
      this.plan = plan;
      this.src = src;
      this.dst = dst;
      this.times = times;
      int stages = plan.pipeline().stages().size();
      this.t = Math.max(1, Math.min(planes, plan.output().d()));
      this.bytes = slabBytes(plan, t);
      long w0 = System.nanoTime();
      buffers.budget().acquire(bytes, MemoryBudget.Use.BATCHES, true, () -> "slabs of " + t + " output planes of volume "
          + src.record() + " " + plan.input() + " through " + plan.pipeline().describe());
      times.add(Phase.WAIT_BUDGET, System.nanoTime() - w0);
      VolumeShape in = plan.input();
      this.hw = in.h() * in.w();
      this.cur = new float[Math.toIntExact(Slab.floats(in, plan.widestInput(0, t)))];
      this.spare = new float[cur.length];
      this.mid = new float[stages][];
      for (int i = 1; i < stages; i++) {
        mid[i] = new float[Math.toIntExact(Slab.floats(plan.shape(i), plan.widestInput(i, t)))];
      }
      this.out = new float[Math.toIntExact(Slab.floats(plan.output(), t))];
    }

    /** Output planes per slab. */
    public int planes() {
      return t;
    }

    /** Host bytes the run holds. */
    public long bytes() {
      return bytes;
    }

    /**
     * Puts the input window of the slab starting at output plane {@code from} into {@code spare}:
     * the planes it shares with the slab in {@code cur} copied over, the rest read from the source.
     * Reads {@code cur} only, so it runs beside the kernels working on {@code cur}.
     */
    private void fill(int from, PhaseTimes t) {
      int[] w = plan.inputPlanes(from, Math.min(plan.output().d(), from + this.t));
      int a = w[0];
      int b = w[1];
      int stride = (b - a) * hw;
      int keepLo = Math.max(a, heldLo);
      if (keepLo < heldHi) {
        for (int c = 0; c < plan.input().c(); c++) {
          System.arraycopy(cur, c * (heldHi - heldLo) * hw + (keepLo - heldLo) * hw, spare, c * stride + (keepLo - a) * hw,
              (heldHi - keepLo) * hw);
        }
      }
      int read = Math.max(heldHi, a);
      if (read < b) {
        long r0 = System.nanoTime();
        src.read(read, b, spare, (read - a) * hw, stride);
        t.add(Phase.READ, System.nanoTime() - r0);
      }
    }

    private void awaitFill() {
      java.util.concurrent.Future<?> f = pendingFill;
      pendingFill = null;
      try {
        f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while reading the next slab of " + src.record(), e);
      } catch (java.util.concurrent.ExecutionException e) {
        if (e.getCause() instanceof RuntimeException r) {
          throw r;
        }
        if (e.getCause() instanceof Error er) {
          throw er;
        }
        throw new IllegalStateException(e.getCause());
      } finally {
        fillTimes.moveTo(times);
      }
    }

    /**
     * Runs the next slab; false when every output plane has been handed over. The slab after it
     * is read on the backend's reader thread while this one's kernels run.
     */
    public boolean step() {
      int od = plan.output().d();
      if (o0 >= od) {
        return false;
      }
      int stages = plan.pipeline().stages().size();
      int o1 = Math.min(od, o0 + t);
      if (pendingFill != null) {
        awaitFill();
      } else {
        fill(o0, times);
      }
      int[] window = plan.inputPlanes(o0, o1);
      float[] swap = cur;
      cur = spare;
      spare = swap;
      heldLo = window[0];
      heldHi = window[1];
      if (o1 < od) {
        pendingFill = slabReader.submit(() -> fill(o1, fillTimes));
      }
      Slab[] sl = plan.slabs(o0, o1);
      long k0 = System.nanoTime();
      float[] x = cur;
      for (int i = 0; i < stages; i++) {
        float[] y = i == stages - 1 ? out : mid[i + 1];
        apply(plan.pipeline().stages().get(i), plan.shape(i), sl[i], x, 1, y);
        x = y;
      }
      times.add(Phase.KERNELS, System.nanoTime() - k0);
      // the identity pipeline hands over the planes it read
      dst.write(o0, o1, x);
      o0 = o1;
      return true;
    }

    /** Gives the buffers back to the budget; safe to call twice. */
    @Override
    public void close() {
      if (!closed) {
        closed = true;
        if (pendingFill != null) {
          try {
            awaitFill();
          } catch (RuntimeException | Error e) {
            // the run is over: the read-ahead's failure is not news
          }
        }
        cur = null;
        spare = null;
        buffers.budget().release(bytes, MemoryBudget.Use.BATCHES);
      }
    }
  }

  private final class Executor implements BatchExecutor {
    private final Pipeline pipeline;
    private final List<VolumeShape> shapes;
    private final int maxBatch;
    private final int gap;
    private final Layout layout;
    private final String what;

    Executor(Pipeline pipeline, VolumeShape input, int maxBatch, int gap) {
      this.pipeline = pipeline;
      this.shapes = pipeline.shapes(input);
      this.gap = gap;
      long largest = shapes.stream().mapToLong(VolumeShape::numel).max().orElseThrow();
      if (largest > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException("volume of shape " + input + " needs " + largest
            + " floats in one pipeline stage; the CPU backend holds at most " + (Integer.MAX_VALUE - 8) + " per array");
      }
      VolumeShape o = shapes.get(shapes.size() - 1);
      long outLimit = (Integer.MAX_VALUE - 8) / (gap + o.bytes());
      this.maxBatch = (int) Math.max(1, Math.min(Math.min(maxBatch, (Integer.MAX_VALUE - 8) / largest), outLimit));
      // identity: volumes go straight into the output bytes, no float arrays
      this.layout = new Layout(pipeline.stages().isEmpty() ? List.of()
          : shapes.stream().map(s -> this.maxBatch * s.numel()).toList(), this.maxBatch * (gap + o.bytes()));
      this.what = "a CPU batch of " + this.maxBatch + " volumes " + input + " through " + pipeline.describe();
    }

    @Override
    public int maxBatch() {
      return maxBatch;
    }

    @Override
    public long batchBytes() {
      return layout.bytes();
    }

    @Override
    public Batch newBatch(boolean mayWait) {
      Buffers b = buffers.take(layout, mayWait, () -> what);
      return b == null ? null : new CpuBatch(b);
    }

    @Override
    public boolean submit(Batch batch, int n, boolean mayWait) {
      CpuBatch b = (CpuBatch) batch;
      if (n < 1 || n > maxBatch) {
        throw new IllegalArgumentException("batch of " + n + " volumes; this executor takes 1.." + maxBatch);
      }
      VolumeShape s0 = shapes.get(0);
      if (b.sink.position() != n * s0.bytes()) {
        throw new IllegalStateException("batch input holds " + b.sink.position() + " bytes, expected " + n
            + " volumes of " + s0 + " = " + n * s0.bytes());
      }
      b.n = n;
      if (pipeline.stages().isEmpty()) {
        return true;
      }
      long t0 = System.nanoTime();
      float[][] a = b.buffers.arrays();
      for (int i = 0; i < pipeline.stages().size(); i++) {
        apply(pipeline.stages().get(i), shapes.get(i), a[i], n, a[i + 1]);
      }
      float[] last = a[a.length - 1];
      VolumeShape o = shapes.get(shapes.size() - 1);
      ByteBuffer out = b.buffers.out();
      out.clear();
      int numel = (int) o.numel();
      for (int i = 0; i < n; i++) {
        out.position((int) (i * (gap + o.bytes()) + gap));
        out.asFloatBuffer().put(last, i * numel, numel);
      }
      b.times.add(Phase.KERNELS, System.nanoTime() - t0);
      return true;
    }

    @Override
    public void close() {
      // batches give their buffers back themselves
    }

    private final class CpuBatch implements Batch {
      final Buffers buffers;
      final VolumeSink sink;
      final PhaseTimes times = new PhaseTimes();
      int n = -1;
      boolean closed;

      CpuBatch(Buffers buffers) {
        this.buffers = buffers;
        this.sink = pipeline.stages().isEmpty() ? new StridedSink(buffers.out(), gap, shapes.get(0).bytes())
            : new FloatSink(buffers.arrays()[0]);
      }

      @Override
      public VolumeSink input() {
        return sink;
      }

      @Override
      public ByteBuffer output() {
        if (n < 0) {
          throw new IllegalStateException("output() before submit()");
        }
        ByteBuffer o = buffers.out().duplicate().order(ByteOrder.LITTLE_ENDIAN);
        o.clear().limit((int) outputOffset(n) - gap);
        return o;
      }

      @Override
      public long outputOffset(int i) {
        return i * (gap + shapes.get(shapes.size() - 1).bytes()) + gap;
      }

      @Override
      public PhaseTimes times() {
        return times;
      }

      @Override
      public void close() {
        if (!closed) {
          closed = true;
          CpuBackend.this.buffers.give(layout, buffers);
        }
      }
    }
  }

  /** Writes volumes into the output bytes, leaving {@code gap} bytes before each (the identity pipeline). */
  private static final class StridedSink implements VolumeSink {
    private final ByteBuffer out;
    private final int gap;
    private final long volume;
    private long pos;

    StridedSink(ByteBuffer out, int gap, long volume) {
      this.out = out;
      this.gap = gap;
      this.volume = volume;
    }

    /** Where byte {@code pos} of the input lands, and how many bytes remain in its volume. */
    private int at() {
      long v = pos / volume;
      return (int) (v * (gap + volume) + gap + pos % volume);
    }

    private int leftInVolume() {
      return (int) Math.min(Integer.MAX_VALUE, volume - pos % volume);
    }

    @Override
    public void put(ByteBuffer src) {
      while (src.hasRemaining()) {
        int n = Math.min(src.remaining(), leftInVolume());
        ByteBuffer part = src.slice(src.position(), n);
        out.put(at(), part, 0, n);
        src.position(src.position() + n);
        pos += n;
      }
    }

    @Override
    public void putFloat(float v) {
      out.order(ByteOrder.LITTLE_ENDIAN).putFloat(at(), v);
      pos += 4;
    }

    @Override
    public ByteBuffer window(int max) {
      return out.slice(at(), Math.min(max, leftInVolume())).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public void advance(int n) {
      pos += n;
    }

    @Override
    public long position() {
      return pos;
    }
  }
}
