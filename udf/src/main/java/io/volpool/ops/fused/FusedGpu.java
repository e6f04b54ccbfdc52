package io.volpool.ops.fused;

import static io.volpool.op.GpuLaunch.args;
import static io.volpool.op.GpuLaunch.ceil;
import static io.volpool.op.GpuLaunch.i32;
import static io.volpool.op.GpuLaunch.inputBuffer;
import static io.volpool.op.GpuLaunch.outputBuffer;
import static io.volpool.op.GpuLaunch.window;

import io.volpool.op.GpuLaunch;
import io.volpool.op.GpuStep;
import io.volpool.op.PoolStage;
import io.volpool.op.Slab;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.util.Arrays;
import java.util.List;

/**
 * fused's CUDA kernels and their launches: {@code fused_generic} (any parameters, tap tables), the
 * 3 -> 16 channel two-tap fast paths, and two that take a following pool into the same kernel, the
 * intermediate never in memory: {@code pipeline_taps2_c3_c16} (an avgpool3d of kernel at most 3, as
 * box sums of the input) and {@code fused_maxpool_taps2_c3_c16} / {@code fused_avgpool_taps2_c3_c16}
 * (any other pool of dilation 1: fused values computed into shared memory, then pooled). Which
 * applies is decided here from the stencil and the pool's window alone, so it is tested without a GPU.
 */
final class FusedGpu {
  private FusedGpu() {}

  /** Channels of the compiled fast-path instantiation (the reference configuration). */
  static final int FAST_CIN = 3;
  static final int FAST_COUT = 16;
  /** Grid dimensions y and z are limited to this in CUDA. */
  static final int MAX_GRID_YZ = 65535;
  /** Shared memory the pipeline kernel may ask for per block (Hopper allows 227 KiB after opting in). */
  static final int SMEM_LIMIT = 160 * 1024;

  static GpuStep step(FusedOp op, List<Stage> stages, List<VolumeShape> shapes, int i, boolean fuseStages) {
    VolumeShape s = shapes.get(i);
    FusedStencil stencil = FusedStencil.of(op, s);
    int[][] linear = taps2(stencil);
    VolumeShape fusedOut = shapes.get(i + 1);
    if (linear != null && fusedOut.d() > MAX_GRID_YZ) {
      linear = null;
    }
    if (fuseStages && linear != null && i + 1 < stages.size() && stages.get(i + 1) instanceof PoolStage pool) {
      VolumeShape pooled = shapes.get(i + 2);
      if (!pool.max() && pool.kernel() <= 3 && Arrays.stream(linear[1]).allMatch(v -> v == 1)
          && PipelineTaps2.fits(pool, s, pooled)) {
        return new PipelineTaps2(i, s, pooled, stencil, linear[0], pool);
      }
      if (FusedPoolTaps2.fits(pool, pooled)) {
        return new FusedPoolTaps2(i, s, pooled, stencil, linear[0], linear[1], pool);
      }
    }
    return linear != null ? new Taps2(i, s, fusedOut, stencil, linear[0], linear[1])
        : new Generic(i, s, fusedOut, stencil);
  }

  /**
   * The fast-path layout of a stencil, or null: 3 -> 16 channels and, in each dimension, one
   * pattern of two taps at offsets {0, 1} whose first input index is {@code base + j * step}.
   * Returns {@code {base[3], step[3]}}.
   */
  static int[][] taps2(FusedStencil st) {
    if (st.op().inChannels() != FAST_CIN || st.op().outChannels() != FAST_COUT) {
      return null;
    }
    int[] base = new int[3];
    int[] step = new int[3];
    FusedStencil.Dim[] dims = {st.d(), st.h(), st.w()};
    for (int k = 0; k < 3; k++) {
      FusedStencil.Dim d = dims[k];
      if (d.patterns() != 1 || d.taps != 2 || d.offset[0][0] != 0 || d.offset[0][1] != 1) {
        return null;
      }
      base[k] = d.start[0];
      step[k] = d.out > 1 ? d.start[1] - d.start[0] : 1;
      for (int j = 0; j < d.out; j++) {
        if (d.start[j] != base[k] + j * step[k]) {
          return null;
        }
      }
    }
    return new int[][] {base, step};
  }

  /** The {@code TapWeights<3,16>} kernel parameter: effective weights of combo 0, then the constants. */
  static float[] tapWeights(FusedStencil st) {
    float[] w = st.weights();
    float[] c = st.constant();
    int per = st.comboSize();
    float[] p = new float[per + c.length];
    System.arraycopy(w, 0, p, 0, per);
    System.arraycopy(c, 0, p, per, c.length);
    return p;
  }

  /** fused, any parameters: tap tables and weights from the stencil, uploaded once per plan. */
  record Generic(int src, VolumeShape in, VolumeShape out, FusedStencil stencil, List<GpuLaunch.Arg> tables)
      implements GpuStep {
    Generic(int src, VolumeShape in, VolumeShape out, FusedStencil st) {
      this(src, in, out, st, tables(st));
    }

    private static List<GpuLaunch.Arg> tables(FusedStencil st) {
      List<GpuLaunch.Arg> t = new java.util.ArrayList<>();
      for (FusedStencil.Dim d : new FusedStencil.Dim[] {st.d(), st.h(), st.w()}) {
        int[] off = new int[d.patterns() * d.taps];
        for (int p = 0; p < d.patterns(); p++) {
          System.arraycopy(d.offset[p], 0, off, p * d.taps, d.taps);
        }
        t.add(new GpuLaunch.Arg.Table(d.start));
        t.add(new GpuLaunch.Arg.Table(d.pattern));
        t.add(new GpuLaunch.Arg.Table(off));
      }
      t.add(new GpuLaunch.Arg.Table(st.weights()));
      t.add(new GpuLaunch.Arg.Table(st.constant()));
      return List.copyOf(t);
    }

    @Override
    public String kernel() {
      return "fused_generic";
    }

    @Override
    public int dst() {
      return src + 1;
    }

    @Override
    public GpuLaunch launch(int n, Slab w) {
      FusedStencil st = stencil;
      return GpuLaunch.gridStride(args(inputBuffer(), outputBuffer(), i32(n), i32(in.c()), i32(out.c()),
          i32(in.d()), i32(in.h()),
          i32(in.w()), i32(out.d()), i32(out.h()), i32(out.w()), window(w), i32(st.d().taps), i32(st.h().taps),
          i32(st.w().taps), i32(st.h().patterns()), i32(st.w().patterns()), tables),
          (long) n * out.c() * w.outDn() * out.h() * out.w(), 256);
    }
  }

  /**
   * fused with one 2-tap pattern per dimension and 3 -> 16 channels: the reference fast path; with
   * unit steps in every dimension (the reference configuration) the 2 x 2 outputs-per-thread kernel.
   */
  record Taps2(int src, VolumeShape in, VolumeShape out, FusedStencil stencil, int[] base, int[] step, float[] weights)
      implements GpuStep {
    Taps2(int src, VolumeShape in, VolumeShape out, FusedStencil st, int[] base, int[] step) {
      this(src, in, out, st, base, step, tapWeights(st));
    }

    @Override
    public String kernel() {
      return unitSteps() ? "fused_taps2s1_c3_c16" : "fused_taps2_c3_c16";
    }

    boolean unitSteps() {
      return step[0] == 1 && step[1] == 1 && step[2] == 1;
    }

    @Override
    public int dst() {
      return src + 1;
    }

    @Override
    public GpuLaunch launch(int n, Slab w) {
      int grid = ceil(out.w(), 32) * ceil(out.h(), 16);
      if (unitSteps()) {
        return GpuLaunch.grid(args(inputBuffer(), outputBuffer(), i32(n), i32(in.d()), i32(in.h()), i32(in.w()),
            i32(out.d()),
            i32(out.h()), i32(out.w()), window(w), i32(base[0]), i32(base[1]), i32(base[2]),
            new GpuLaunch.Arg.Struct(weights)), grid, ceil(w.outDn(), 2), n, 16, 16, 0);
      }
      return GpuLaunch.grid(args(inputBuffer(), outputBuffer(), i32(n), i32(in.d()), i32(in.h()), i32(in.w()),
            i32(out.d()),
          i32(out.h()), i32(out.w()), window(w), i32(base[0]), i32(step[0]), i32(base[1]), i32(step[1]), i32(base[2]),
          i32(step[2]), new GpuLaunch.Arg.Struct(weights)), grid, w.outDn(), n, 16, 16, 0);
    }
  }

  /** fused then avgpool3d (kernel at most 3) in one kernel, no intermediate in memory: box sums of the input. */
  record PipelineTaps2(int src, VolumeShape in, VolumeShape out, FusedStencil stencil, int[] base, PoolStage pool,
      float[] weights) implements GpuStep {
    PipelineTaps2(int src, VolumeShape in, VolumeShape out, FusedStencil st, int[] base, PoolStage pool) {
      this(src, in, out, st, base, pool, tapWeights(st));
    }

    @Override
    public String kernel() {
      return "pipeline_taps2_c3_c16";
    }

    @Override
    public int dst() {
      return src + 2;
    }

    /** Block width: final outputs along W per block (16 for narrow planes, else 32); blocks hold 256 threads. */
    static int tileWidth(int pw) {
      return pw <= 16 ? 16 : 32;
    }

    /** Input planes a block stages (two final planes): stride + kernel + 1. */
    static int planes(PoolStage pool) {
      return pool.stride() + pool.kernel() + 1;
    }

    /** Staged rows per plane: (TH-1)*stride + kernel + 1. */
    static int rows(PoolStage pool, int pw) {
      return (256 / tileWidth(pw) - 1) * pool.stride() + pool.kernel() + 1;
    }

    /** 16-byte chunks per staged row at the worst alignment shift (3 floats). */
    static int chunks(PoolStage pool, int pw) {
      return ((tileWidth(pw) - 1) * pool.stride() + pool.kernel() + 1 + 6) >> 2;
    }

    /** Shared memory one block stages: 3 channels x planes x rows x chunks x 16 bytes. */
    static int smemBytes(PoolStage pool, int pw) {
      return FAST_CIN * planes(pool) * rows(pool, pw) * chunks(pool, pw) * 16;
    }

    /** Whether the kernel's fixed limits hold: 16-byte rows, at most 7 planes, 4 staging slots per thread. */
    static boolean fits(PoolStage pool, VolumeShape in, VolumeShape out) {
      return in.w() % 4 == 0 && planes(pool) <= 7 && rows(pool, out.w()) * chunks(pool, out.w()) <= 4 * 256
          && smemBytes(pool, out.w()) <= SMEM_LIMIT && (out.d() + 1) / 2 <= MAX_GRID_YZ;
    }

    @Override
    public GpuLaunch launch(int n, Slab w) {
      VolumeShape fusedOut = stencil.output();
      PoolStage a = pool;
      int bx = tileWidth(out.w());
      int by = 256 / bx;
      return GpuLaunch.grid(args(inputBuffer(), outputBuffer(), i32(n), i32(in.d()), i32(in.h()), i32(in.w()),
          i32(fusedOut.d()),
          i32(fusedOut.h()), i32(fusedOut.w()), i32(out.d()), i32(out.h()), i32(out.w()), window(w), i32(base[0]),
          i32(base[1]), i32(base[2]), i32(a.kernel()), i32(a.stride()), i32(a.padding()), i32(a.ceilMode() ? 1 : 0),
          i32(a.countIncludePad() ? 1 : 0), new GpuLaunch.Arg.Struct(weights)), ceil(out.w(), bx) * ceil(out.h(), by),
          ceil(w.outDn(), 2), n, bx, by, smemBytes(a, out.w()));
    }
  }

  /**
   * fused then any pool of dilation 1 (maxpool3d, or an avgpool3d the box-sum kernel does not take) in
   * one kernel: blocks of {@link #TW} x {@link #TH} threads own as many final outputs of {@link #PLANES}
   * final planes, computing the fused values their windows read one fused plane at a time into shared
   * memory. The constants are the kernel's ({@code FP_TW}, {@code FP_TH}, {@code VOLPOOL_FP_PLANES}).
   */
  record FusedPoolTaps2(int src, VolumeShape in, VolumeShape out, FusedStencil stencil, int[] base, int[] step,
      PoolStage pool, float[] weights) implements GpuStep {
    static final int TW = FusedGpuGeometry.TW;
    static final int TH = FusedGpuGeometry.TH;
    static final int PLANES = FusedGpuGeometry.PLANES;

    FusedPoolTaps2(int src, VolumeShape in, VolumeShape out, FusedStencil st, int[] base, int[] step, PoolStage pool) {
      this(src, in, out, st, base, step, pool, tapWeights(st));
    }

    /** Shared memory of one block: one fused plane of its region, 16 channels. */
    static int smemBytes(PoolStage pool) {
      return FAST_COUT * ((TH - 1) * pool.stride() + pool.kernel()) * ((TW - 1) * pool.stride() + pool.kernel()) * 4;
    }

    /** Dilation 1, a fused region that fits shared memory, the final planes within the grid's y. */
    static boolean fits(PoolStage pool, VolumeShape out) {
      return pool.dilation() == 1 && smemBytes(pool) <= SMEM_LIMIT && ceil(out.d(), PLANES) <= MAX_GRID_YZ;
    }

    @Override
    public String kernel() {
      return pool.max() ? "fused_maxpool_taps2_c3_c16" : "fused_avgpool_taps2_c3_c16";
    }

    @Override
    public int dst() {
      return src + 2;
    }

    @Override
    public GpuLaunch launch(int n, Slab w) {
      VolumeShape f = stencil.output();
      PoolStage p = pool;
      List<GpuLaunch.Arg> a = args(inputBuffer(), outputBuffer(), i32(n), i32(in.d()), i32(in.h()), i32(in.w()),
          i32(f.d()), i32(f.h()), i32(f.w()), i32(out.d()), i32(out.h()), i32(out.w()), window(w), i32(base[0]),
          i32(step[0]), i32(base[1]), i32(step[1]), i32(base[2]), i32(step[2]), i32(p.kernel()), i32(p.stride()),
          i32(p.padding()));
      a = p.max() ? args(a, new GpuLaunch.Arg.Struct(weights))
          : args(a, i32(p.countIncludePad() ? 1 : 0), new GpuLaunch.Arg.Struct(weights));
      return GpuLaunch.grid(a, ceil(out.w(), TW) * ceil(out.h(), TH), ceil(w.outDn(), PLANES), n, TW, TH, smemBytes(p));
    }
  }
}
