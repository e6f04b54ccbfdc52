package io.volpool.cuda;

import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedOp;
import io.volpool.op.FusedStencil;
import io.volpool.op.Pipeline;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Which kernels run a pipeline on one input shape, and on which buffers. Pure Java (no native
 * calls), so the choice of fast paths is tested without a GPU. Buffer {@code i} holds the volumes
 * of {@code shapes().get(i)}: 0 is the input, the last the output; an identity pipeline has no steps.
 */
public final class KernelPlan {
  /** Channels of the compiled fast-path instantiation (the reference configuration). */
  static final int FAST_CIN = 3;
  static final int FAST_COUT = 16;

  /** One kernel launch reading buffer {@code src} and writing buffer {@code dst}. */
  public sealed interface Step permits FusedGeneric, FusedTaps2, AvgGeneric, AvgK3S2P1, PipelineTaps2 {
    String kernel();

    int src();

    int dst();
  }

  /** fused, any parameters: tap tables and weights from the stencil. */
  public record FusedGeneric(int src, int dst, FusedStencil stencil) implements Step {
    @Override
    public String kernel() {
      return "fused_generic";
    }
  }

  /**
   * fused with one 2-tap pattern per dimension and 3 -> 16 channels: the reference fast path; with
   * unit steps in every dimension (the reference configuration) the 2 x 2 outputs-per-thread kernel.
   */
  public record FusedTaps2(int src, int dst, FusedStencil stencil, int[] base, int[] step) implements Step {
    @Override
    public String kernel() {
      return unitSteps() ? "fused_taps2s1_c3_c16" : "fused_taps2_c3_c16";
    }

    public boolean unitSteps() {
      return step[0] == 1 && step[1] == 1 && step[2] == 1;
    }
  }

  /** avgpool3d, any parameters. */
  public record AvgGeneric(int src, int dst, AvgPool3dSpec spec, VolumeShape in, VolumeShape out) implements Step {
    @Override
    public String kernel() {
      return "avgpool_generic";
    }
  }

  /** avgpool3d kernel 3, stride 2, padding 1, W a multiple of 4: each input byte read once, in 16-byte loads. */
  public record AvgK3S2P1(int src, int dst, AvgPool3dSpec spec, VolumeShape in, VolumeShape out) implements Step {
    @Override
    public String kernel() {
      return "avgpool_k3s2p1";
    }
  }

  /** fused then avgpool3d (kernel at most 3) in one kernel, no intermediate in memory. */
  public record PipelineTaps2(int src, int dst, FusedStencil stencil, int[] base, AvgPool3dSpec pool)
      implements Step {
    @Override
    public String kernel() {
      return "pipeline_taps2_c3_c16";
    }

    /** Block width: final outputs along W per block (16 for narrow planes, else 32); blocks hold 256 threads. */
    public static int tileWidth(int pw) {
      return pw <= 16 ? 16 : 32;
    }

    /** Input planes a block stages (two final planes): stride + kernel + 1. */
    static int planes(AvgPool3dSpec pool) {
      return pool.stride() + pool.kernel() + 1;
    }

    /** Staged rows per plane: (TH-1)*stride + kernel + 1. */
    static int rows(AvgPool3dSpec pool, int pw) {
      return (256 / tileWidth(pw) - 1) * pool.stride() + pool.kernel() + 1;
    }

    /** 16-byte chunks per staged row at the worst alignment shift (3 floats). */
    static int chunks(AvgPool3dSpec pool, int pw) {
      return ((tileWidth(pw) - 1) * pool.stride() + pool.kernel() + 1 + 6) >> 2;
    }

    /** Shared memory one block stages: 3 channels x planes x rows x chunks x 16 bytes. */
    public static int smemBytes(AvgPool3dSpec pool, int pw) {
      return FAST_CIN * planes(pool) * rows(pool, pw) * chunks(pool, pw) * 16;
    }

    /** Whether the kernel's fixed limits hold: 16-byte rows, at most 7 planes, 4 staging slots per thread. */
    static boolean fits(AvgPool3dSpec pool, VolumeShape in, VolumeShape out) {
      return in.w() % 4 == 0 && planes(pool) <= 7 && rows(pool, out.w()) * chunks(pool, out.w()) <= 4 * 256
          && smemBytes(pool, out.w()) <= SMEM_LIMIT && ceil2(out.d()) <= MAX_GRID_YZ;
    }

    private static int ceil2(int v) {
      return (v + 1) / 2;
    }
  }

  /** Grid dimensions y and z are limited to this in CUDA. */
  static final int MAX_GRID_YZ = 65535;
  /** Shared memory the pipeline kernel may ask for per block (Hopper allows 227 KiB after opting in). */
  static final int SMEM_LIMIT = 160 * 1024;

  private final Pipeline pipeline;
  private final List<VolumeShape> shapes;
  private final List<Step> steps;

  private KernelPlan(Pipeline pipeline, List<VolumeShape> shapes, List<Step> steps) {
    this.pipeline = pipeline;
    this.shapes = shapes;
    this.steps = steps;
  }

  /** Plans {@code pipeline} on inputs of shape {@code in}; rejects shapes the pipeline cannot take. */
  public static KernelPlan of(Pipeline pipeline, VolumeShape in) {
    return of(pipeline, in, true);
  }

  /**
   * Plans {@code pipeline}; with {@code fuseStages} false, fused then avgpool3d stays two kernels
   * (benchmarks compare the two).
   */
  public static KernelPlan of(Pipeline pipeline, VolumeShape in, boolean fuseStages) {
    List<VolumeShape> shapes = pipeline.shapes(in);
    List<Stage> stages = pipeline.stages();
    List<Step> steps = new ArrayList<>();
    int i = 0;
    while (i < stages.size()) {
      Stage st = stages.get(i);
      VolumeShape s = shapes.get(i);
      if (st instanceof FusedOp f) {
        FusedStencil stencil = FusedStencil.of(f, s);
        int[][] linear = taps2(stencil);
        VolumeShape fusedOut = shapes.get(i + 1);
        if (linear != null && fusedOut.d() > MAX_GRID_YZ) {
          linear = null;
        }
        if (fuseStages && linear != null && i + 1 < stages.size() && stages.get(i + 1) instanceof AvgPool3dSpec pool
            && pool.kernel() <= 3 && Arrays.stream(linear[1]).allMatch(v -> v == 1)
            && PipelineTaps2.fits(pool, s, shapes.get(i + 2))) {
          steps.add(new PipelineTaps2(i, i + 2, stencil, linear[0], pool));
          i += 2;
          continue;
        }
        steps.add(linear != null ? new FusedTaps2(i, i + 1, stencil, linear[0], linear[1])
            : new FusedGeneric(i, i + 1, stencil));
      } else if (st instanceof AvgPool3dSpec a) {
        boolean fast = a.kernel() == 3 && a.stride() == 2 && a.padding() == 1 && s.w() % 4 == 0;
        steps.add(fast ? new AvgK3S2P1(i, i + 1, a, s, shapes.get(i + 1)) : new AvgGeneric(i, i + 1, a, s, shapes.get(i + 1)));
      } else {
        throw new IllegalStateException("no CUDA kernel for stage " + st.name());
      }
      i++;
    }
    return new KernelPlan(pipeline, List.copyOf(shapes), List.copyOf(steps));
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

  public Pipeline pipeline() {
    return pipeline;
  }

  public List<VolumeShape> shapes() {
    return shapes;
  }

  public List<Step> steps() {
    return steps;
  }

  /** Every stage's window over the whole volume (what a batch of whole volumes runs). */
  public io.volpool.op.Slab[] wholeSlabs() {
    io.volpool.op.Slab[] w = new io.volpool.op.Slab[shapes.size() - 1];
    for (int i = 0; i < w.length; i++) {
      w[i] = io.volpool.op.Slab.whole(shapes.get(i), shapes.get(i + 1));
    }
    return w;
  }

  /** The buffer holding the final output. */
  public int outputBuffer() {
    return steps.isEmpty() ? 0 : steps.get(steps.size() - 1).dst();
  }

  /** True when buffer {@code i} is read or written by some step (intermediates of a fused kernel are not). */
  public boolean used(int i) {
    return i == 0 || steps.stream().anyMatch(s -> s.src() == i || s.dst() == i);
  }

  /** The kernels in launch order, e.g. {@code pipeline_taps2_c3_c16}. */
  public String describe() {
    return steps.isEmpty() ? "copy" : steps.stream().map(Step::kernel).collect(Collectors.joining(" -> "));
  }
}
