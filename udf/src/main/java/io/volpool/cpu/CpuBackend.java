package io.volpool.cpu;

import io.volpool.backend.Backend;
import io.volpool.backend.BatchExecutor;
import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedOp;
import io.volpool.op.Pipeline;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.ForkJoinPool;

/**
 * The CPU backend: runs each stage of a pipeline over the whole batch with {@link VolumeKernels}.
 * Owns the thread pool of the fast kernels; one instance per JVM, closed by {@link io.volpool.backend.Backends}.
 */
public final class CpuBackend implements Backend {
  /** Target bytes of the largest per-stage array of one batch when the user sets no batch size. */
  static final long AUTO_BATCH_BYTES = 64L << 20;

  private final VolumeKernels kernels;
  private final ForkJoinPool pool;
  private final String name;

  private CpuBackend(VolumeKernels kernels, ForkJoinPool pool, String name) {
    this.kernels = kernels;
    this.pool = pool;
    this.name = name;
  }

  /** The fast multi-threaded backend; {@code threads <= 0} means one thread per available core. */
  public static CpuBackend fast(int threads) {
    int t = threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
    ForkJoinPool pool = new ForkJoinPool(t);
    return new CpuBackend(new FastKernels(pool), pool, "cpu (" + t + " threads)");
  }

  /** The plain float64 reference backend (single-threaded, slow): for checking, not for production. */
  public static CpuBackend reference() {
    return new CpuBackend(new ReferenceKernels(), null, "cpu-reference");
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int suggestBatch(Pipeline pipeline, VolumeShape input) {
    long largest = pipeline.shapes(input).stream().mapToLong(VolumeShape::bytes).max().orElse(input.bytes());
    return (int) Math.max(1, Math.min(1024, AUTO_BATCH_BYTES / largest));
  }

  @Override
  public BatchExecutor open(Pipeline pipeline, VolumeShape input, int maxBatch) {
    return new Executor(pipeline, input, maxBatch);
  }

  @Override
  public void close() {
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
    if (st instanceof FusedOp f) {
      kernels.fused(f, in, x, n, y);
    } else if (st instanceof AvgPool3dSpec a) {
      kernels.avgPool3d(a, in, x, n, y);
    } else {
      throw new IllegalStateException("no CPU kernel for stage " + st.name());
    }
  }

  private final class Executor implements BatchExecutor {
    private final Pipeline pipeline;
    private final List<VolumeShape> shapes;
    private final int maxBatch;
    private final float[][] arrays;
    private final ByteBuffer in;
    private final ByteBuffer out;
    private int pending = -1;

    Executor(Pipeline pipeline, VolumeShape input, int maxBatch) {
      this.pipeline = pipeline;
      this.shapes = pipeline.shapes(input);
      long largest = shapes.stream().mapToLong(VolumeShape::numel).max().orElseThrow();
      if (largest > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException("volume of shape " + input + " needs " + largest
            + " floats in one pipeline stage; the CPU backend holds at most " + (Integer.MAX_VALUE - 8) + " per array");
      }
      this.maxBatch = (int) Math.max(1, Math.min(maxBatch, (Integer.MAX_VALUE - 8) / largest));
      this.arrays = new float[shapes.size()][];
      for (int i = 0; i < shapes.size(); i++) {
        arrays[i] = new float[(int) (this.maxBatch * shapes.get(i).numel())];
      }
      this.in = ByteBuffer.allocate(Math.toIntExact(this.maxBatch * input.bytes())).order(ByteOrder.LITTLE_ENDIAN);
      VolumeShape o = shapes.get(shapes.size() - 1);
      this.out = ByteBuffer.allocate(Math.toIntExact(this.maxBatch * o.bytes())).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public int slots() {
      return 1;
    }

    @Override
    public int maxBatch() {
      return maxBatch;
    }

    @Override
    public ByteBuffer input(int slot) {
      in.clear();
      return in;
    }

    @Override
    public void submit(int slot, int n) {
      if (n < 1 || n > maxBatch) {
        throw new IllegalArgumentException("batch of " + n + " volumes; this executor takes 1.." + maxBatch);
      }
      VolumeShape s0 = shapes.get(0);
      if (in.position() != n * s0.bytes()) {
        throw new IllegalStateException("slot input holds " + in.position() + " bytes, expected " + n + " volumes of "
            + s0 + " = " + n * s0.bytes());
      }
      ByteBuffer src = in.duplicate().order(ByteOrder.LITTLE_ENDIAN);
      src.flip();
      src.asFloatBuffer().get(arrays[0], 0, (int) (n * s0.numel()));
      for (int i = 0; i < pipeline.stages().size(); i++) {
        apply(pipeline.stages().get(i), shapes.get(i), arrays[i], n, arrays[i + 1]);
      }
      float[] last = arrays[arrays.length - 1];
      int count = (int) (n * shapes.get(shapes.size() - 1).numel());
      out.clear();
      out.asFloatBuffer().put(last, 0, count);
      out.limit(count * Float.BYTES);
      pending = n;
    }

    @Override
    public ByteBuffer output(int slot) {
      if (pending < 0) {
        throw new IllegalStateException("output() before submit()");
      }
      pending = -1;
      return out.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public void close() {
      // heap buffers only
    }
  }
}
