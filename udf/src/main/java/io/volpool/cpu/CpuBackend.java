package io.volpool.cpu;

import io.volpool.backend.Backend;
import io.volpool.backend.Batch;
import io.volpool.backend.BatchExecutor;
import io.volpool.backend.FloatSink;
import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSink;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.SlabInput;
import io.volpool.backend.SlabRun;
import io.volpool.backend.VolumePlan;
import io.volpool.backend.VolumeSink;
import io.volpool.backend.WideningSink;
import io.volpool.format.Narrow;
import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
import io.volpool.memory.BufferPool;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.Parallel;
import io.volpool.op.Pipeline;
import io.volpool.op.Slab;
import io.volpool.op.SlabPlan;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.List;
import java.util.concurrent.ForkJoinPool;

/**
 * The CPU backend: runs each stage of a pipeline over the whole batch with the stage's own CPU
 * kernel ({@link Stage#runCpu}, or {@link Stage#runReference} for the reference backend).
 * Readers write volumes straight into the batch's first float array (converted from little-endian
 * bytes on the way in); the last stage's floats are written to a byte buffer with the caller's gap
 * before each volume. Owns the thread pool of the fast kernels and a pool of batch buffers counted
 * against the memory budget; one instance per JVM, closed by {@link io.volpool.exec.Backends}.
 */
public final class CpuBackend implements Backend {
  /** Target bytes of the largest per-stage array of one batch when the user sets no batch size. */
  static final long AUTO_BATCH_BYTES = 64L << 20;

  /** Work split over the pool; null for the single-threaded reference backend. */
  private final Parallel par;
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

  private CpuBackend(ForkJoinPool pool, String name, MemoryBudget budget) {
    this.pool = pool;
    this.par = pool == null ? null : (units, body) -> {
      if (units == 1 || pool.getParallelism() == 1) {
        Parallel.SERIAL.forEach(units, body);
      } else {
        pool.submit(() -> java.util.stream.IntStream.range(0, units).parallel().forEach(body)).join();
      }
    };
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
    return new CpuBackend(pool, "cpu (" + t + " threads)", budget);
  }

  /** The fast backend with a budget of its own (tests and tools). */
  public static CpuBackend fast(int threads) {
    return fast(threads, new MemoryBudget(MemoryBudget.defaultLimit()));
  }

  /** The plain float64 reference backend (single-threaded, slow): for checking, not for production. */
  public static CpuBackend reference() {
    return new CpuBackend(null, "cpu-reference", new MemoryBudget(MemoryBudget.defaultLimit()));
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
  public BatchExecutor open(Pipeline pipeline, VolumeShape input, ValueType stored, int maxBatch, int device,
      int outputGap) {
    return new Executor(pipeline, input, stored, maxBatch, outputGap);
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
    if (par == null) {
      st.runReference(in, slab, x, n, y);
    } else {
      st.runCpu(par, in, slab, x, n, y);
    }
  }

  /** Host bytes a batch of {@code n} volumes of {@code in} holds on this backend (see {@link BatchExecutor#batchBytes()}). */
  public static long batchBytes(Pipeline pipeline, VolumeShape in, int n, int gap) {
    List<VolumeShape> shapes = pipeline.shapes(in);
    VolumeShape o = shapes.get(shapes.size() - 1);
    long floats = pipeline.stages().isEmpty() ? 0 : shapes.stream().mapToLong(VolumeShape::numel).sum() * n;
    return floats * Float.BYTES + n * (gap + o.bytes());
  }

  @Override
  public long slabBytes(SlabPlan plan, int planes) {
    int t = Math.min(planes, plan.output().d());
    // two input windows (one being read ahead), one window per later stage, the output planes
    long floats = 2 * SlabInput.floats(plan, t) + Slab.floats(plan.output(), t);
    for (int i = 1; i < plan.pipeline().stages().size(); i++) {
      floats += Slab.floats(plan.shape(i), plan.widestInput(i, t));
    }
    return floats * Float.BYTES;
  }

  /**
   * Host bytes a slab run aims at, as a batch's stage arrays do ({@link #AUTO_BATCH_BYTES}): slabs sized
   * for the caches and the read-ahead, not the largest that fits the budget (a 321 MiB int16 volume took
   * 5.9-6.7 s and 2.2-2.8 GiB in slabs of 544 MiB under the default budget, 3.6-5.2 s and 0.6-0.7 GiB in
   * slabs of 8.5-136 MiB; docs/benchmarks.md). A smaller budget gives smaller slabs.
   */
  static final long SLAB_BYTES = AUTO_BATCH_BYTES;

  @Override
  public int slabPlanes(SlabPlan plan, long hostBytes, int device) {
    int planes = mostPlanes(plan, Math.min(hostBytes, SLAB_BYTES));
    // a plane larger than the aim still runs, one slab per plane count that the budget holds
    return planes >= 1 ? planes : mostPlanes(plan, hostBytes);
  }

  private int mostPlanes(SlabPlan plan, long hostBytes) {
    java.util.function.IntPredicate fits = t -> slabBytes(plan, t) <= hostBytes && largestSlabArray(plan, t) <= MAX_ARRAY;
    return plan.mostPlanes(fits);
  }

  /** The most floats one array of a slab run of {@code t} output planes holds. */
  private static long largestSlabArray(SlabPlan plan, int t) {
    long most = Math.max(SlabInput.floats(plan, t), Slab.floats(plan.output(), Math.min(t, plan.output().d())));
    for (int i = 1; i < plan.pipeline().stages().size(); i++) {
      most = Math.max(most, Slab.floats(plan.shape(i), plan.widestInput(i, Math.min(t, plan.output().d()))));
    }
    return most;
  }

  /** Floats the CPU backend puts in one array at most. */
  private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

  @Override
  public VolumePlan plan(Pipeline pipeline, VolumeShape input, int batchSize, long volumesAtMost, int device, int outputGap,
      MemoryBudget budget) {
    List<VolumeShape> shapes = pipeline.shapes(input);
    VolumeShape o = shapes.get(shapes.size() - 1);
    long largest = shapes.stream().mapToLong(VolumeShape::numel).max().orElseThrow();
    long one = batchBytes(pipeline, input, 1, outputGap);
    if (largest > MAX_ARRAY || outputGap + o.bytes() > MAX_ARRAY || one > budget.maxRequest()) {
      SlabPlan sp = new SlabPlan(pipeline, input);
      int planes = requireSlabPlanes(sp, budget, device);
      return VolumePlan.slabs(planes, "one volume needs " + MemoryBudget.mib(one) + " as a batch, more than one request"
          + " of the " + MemoryBudget.mib(budget.limit()) + " memory budget (" + MemoryBudget.mib(budget.maxRequest()) + ")"
          + " or one Java array: slabs of " + planes + " output planes (" + MemoryBudget.mib(slabBytes(sp, planes)) + ")");
    }
    long fit = Math.min(MAX_ARRAY / largest, MAX_ARRAY / (outputGap + o.bytes()));
    if (batchSize > 0) {
      // a set batch size is the user's to keep, up to what one array holds
      return VolumePlan.whole((int) Math.min(batchSize, fit), "batch size set to " + batchSize);
    }
    long auto = Math.max(1, Math.min(1024, AUTO_BATCH_BYTES / (largest * Float.BYTES)));
    long byBudget = Math.max(1, budget.maxRequest() / one);
    int n = (int) Math.max(1, Math.min(Math.min(Math.min(auto, byBudget), fit), volumesAtMost > 0 ? volumesAtMost : fit));
    return VolumePlan.whole(n, "about " + MemoryBudget.mib(AUTO_BATCH_BYTES) + " per stage array, within one request of"
        + " the memory budget");
  }

  /** The most slab planes fitting one request of {@code budget}, or a clear refusal naming the setting. */
  int requireSlabPlanes(SlabPlan sp, MemoryBudget budget, int device) {
    int planes = slabPlanes(sp, budget.maxRequest(), device);
    if (planes < 1) {
      long b = slabBytes(sp, 1);
      throw new io.volpool.memory.MemoryBudgetException("one output plane through " + sp.pipeline().describe()
          + " needs " + MemoryBudget.mib(b) + " of slab buffers, more than half of the "
          + MemoryBudget.mib(budget.limit()) + " memory budget; raise " + MemoryBudget.SETTING + " (and the memory behind"
          + " it) to at least " + MemoryBudget.mib(2 * b), b, budget.limit());
    }
    return planes;
  }

  @Override
  public int deviceFor(String gpuAddress) {
    return 0;
  }

  /**
   * Starts a slabbed run; the caller drives it with {@link SlabRun#step()} and closes it. The
   * buffers ({@link #slabBytes}) are taken from the memory budget, waiting for room: call it
   * holding no other batch.
   */
  @Override
  public SlabRun startSlabs(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times, int device,
      int from, int to) {
    return new CpuSlabRun(plan, planes, src, dst, times, from, to);
  }

  /** Runs {@code plan} over the one volume of {@code src} in slabs (tests and tools). */
  public void runSlabs(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times) {
    try (SlabRun run = startSlabs(plan, planes, src, dst, times, 0)) {
      while (run.step()) {
        // each step hands one slab to dst
      }
    }
  }

  /** One volume through a pipeline in slabs along D, every stage on the window {@link SlabInput} reads. */
  private final class CpuSlabRun implements SlabRun {
    private final SlabPlan plan;
    private final PlaneSink dst;
    private final PhaseTimes times;
    private final int t;
    private final long bytes;
    private final SlabInput input;
    private final float[][] mid;
    private final float[] out;
    private int o0;
    private final int end;
    private boolean closed;

    CpuSlabRun(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times, int from, int to) {
      this.plan = plan;
      this.dst = dst;
      this.times = times;
      int stages = plan.pipeline().stages().size();
      this.t = Math.max(1, Math.min(planes, plan.output().d()));
      io.volpool.backend.SlabRanges.check(plan, t, from, to);
      this.o0 = from;
      this.end = to;
      this.bytes = slabBytes(plan, t);
      long w0 = System.nanoTime();
      buffers.budget().acquire(bytes, MemoryBudget.Use.BATCHES, true, () -> "slabs of " + t + " output planes of volume "
          + src.record() + " " + plan.input() + " through " + plan.pipeline().describe());
      times.add(Phase.WAIT_BUDGET, System.nanoTime() - w0);
      try {
        int window = Math.toIntExact(SlabInput.floats(plan, t));
        this.input = new SlabInput(plan, t, src, times, slabReader, FloatBuffer.wrap(new float[window]),
            FloatBuffer.wrap(new float[window])).until(to);
        this.mid = new float[stages][];
        for (int i = 1; i < stages; i++) {
          mid[i] = new float[Math.toIntExact(Slab.floats(plan.shape(i), plan.widestInput(i, t)))];
        }
        this.out = new float[Math.toIntExact(Slab.floats(plan.output(), t))];
      } catch (RuntimeException | Error e) {
        buffers.budget().release(bytes, MemoryBudget.Use.BATCHES);
        throw e;
      }
    }

    @Override
    public int planes() {
      return t;
    }

    @Override
    public long bytes() {
      return bytes;
    }

    @Override
    public boolean step() {
      if (o0 >= end) {
        return false;
      }
      int stages = plan.pipeline().stages().size();
      int o1 = Math.min(end, o0 + t);
      float[] x = input.next(o0).array();
      Slab[] sl = plan.slabs(o0, o1);
      long k0 = System.nanoTime();
      for (int i = 0; i < stages; i++) {
        float[] y = i == stages - 1 ? out : mid[i + 1];
        apply(plan.pipeline().stages().get(i), plan.shape(i), sl[i], x, 1, y);
        x = y;
      }
      times.add(Phase.KERNELS, System.nanoTime() - k0);
      // the identity pipeline hands over the planes it read
      dst.write(o0, o1, FloatBuffer.wrap(x));
      o0 = o1;
      return true;
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        input.close();
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
    /** The stored type batches take: widened (and rescaled) as each volume loads into the batch. */
    private final ValueType stored;

    Executor(Pipeline pipeline, VolumeShape input, ValueType stored, int maxBatch, int gap) {
      this.pipeline = pipeline;
      this.stored = stored;
      this.shapes = pipeline.shapes(input);
      this.gap = gap;
      long largest = shapes.stream().mapToLong(VolumeShape::numel).max().orElseThrow();
      VolumeShape o = shapes.get(shapes.size() - 1);
      if (maxBatch < 1 || maxBatch * largest > MAX_ARRAY || maxBatch * (gap + o.bytes()) > MAX_ARRAY) {
        // plan() never asks for this: such volumes run in slabs
        throw new IllegalArgumentException("a CPU batch of " + maxBatch + " volumes " + input + " through "
            + pipeline.describe() + " needs more than one Java array holds (" + MAX_ARRAY + " floats or bytes)");
      }
      this.maxBatch = maxBatch;
      // identity: volumes go straight into the output bytes, no float arrays
      this.layout = new Layout(pipeline.stages().isEmpty() ? List.of()
          : shapes.stream().map(s -> this.maxBatch * s.numel()).toList(), this.maxBatch * (gap + o.bytes()));
      this.what = "a CPU batch of " + this.maxBatch + " volumes " + input + " through " + pipeline.describe();
    }

    @Override
    public ValueType stored() {
      return stored;
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
        // the input was written where the output goes: narrowed there, volume by volume
        long t0 = System.nanoTime();
        for (int i = 0; i < n && pipeline.narrows(); i++) {
          Narrow.inPlace(b.buffers.out(), i * (gap + s0.bytes()) + gap, s0.numel(), pipeline.output());
        }
        b.times.add(Phase.KERNELS, System.nanoTime() - t0);
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
        Narrow.put(last, i * numel, out, (int) (i * (gap + o.bytes()) + gap), numel, pipeline.output());
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
      /** The next volume's input: the stored values widened and rescaled into {@link #sink} as they load. */
      VolumeSink volume;
      /** What {@link #volume} is for stored values: one for the batch's volumes, its buffers made once. */
      final WideningSink widening = WideningSink.reusable();
      int rescaled;
      int n = -1;
      boolean closed;

      CpuBatch(Buffers buffers) {
        this.buffers = buffers;
        this.sink = pipeline.stages().isEmpty() ? new StridedSink(buffers.out(), gap, shapes.get(0).bytes())
            : new FloatSink(buffers.arrays()[0]);
        this.volume = sink;
      }

      @Override
      public VolumeSink input() {
        if (!stored.isFloat32() && volume == sink) {
          throw new IllegalStateException("stored " + stored + " values written before the volume's rescale() was set");
        }
        return volume;
      }

      @Override
      public void rescale(int i, Rescale r) {
        if (stored.isFloat32() || i != rescaled || sink.position() != i * shapes.get(0).bytes()) {
          throw new IllegalStateException("rescale(" + i + ") on a batch of " + stored + " holding "
              + sink.position() + " bytes");
        }
        rescaled++;
        volume = widening.to(sink, stored, r);
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
