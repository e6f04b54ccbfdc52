package io.volpool.cuda;

import io.volpool.format.ValueType;
import io.volpool.op.GpuStep;
import io.volpool.op.Pipeline;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Which kernels run a pipeline on one input shape, and on which buffers: each stage's own
 * {@link Stage#gpu} step, in order (a step may take the stages after it into one kernel). Pure
 * Java (no native calls), so the choice of fast paths is tested without a GPU. Buffer {@code i}
 * holds the volumes of {@code shapes().get(i)}: 0 is the input, the last the output; an identity
 * pipeline has no steps. Volumes arrive as {@link #stored()} values: float32, or 8- and 16-bit
 * values that the first step reads as they are when its kernel can ({@link GpuStep#reading}), and
 * that a widen kernel turns into float32 in buffer 0 first otherwise ({@link #widens()}).
 */
public final class KernelPlan {
  /** Grid dimensions y and z are limited to this in CUDA; some kernels carry the batch in z. */
  static final int MAX_GRID_YZ = 65535;

  private final Pipeline pipeline;
  private final List<VolumeShape> shapes;
  private final List<GpuStep> steps;
  private final ValueType stored;
  private final boolean widens;

  private KernelPlan(Pipeline pipeline, List<VolumeShape> shapes, List<GpuStep> steps, ValueType stored,
      boolean widens) {
    this.pipeline = pipeline;
    this.shapes = shapes;
    this.steps = steps;
    this.stored = stored;
    this.widens = widens;
  }

  /**
   * Plans {@code pipeline} on inputs of shape {@code in} stored as {@code stored}: float32, or 8- and
   * 16-bit values the device widens (read as they are by a first step that can, else widened first).
   */
  public static KernelPlan of(Pipeline pipeline, VolumeShape in, ValueType stored) {
    KernelPlan f = of(pipeline, in);
    if (stored.isFloat32()) {
      return f;
    }
    if (stored.itemSize() > 2) {
      throw new IllegalArgumentException("the GPU widens 8- and 16-bit values, not " + stored);
    }
    GpuStep first = f.steps.isEmpty() ? null : f.steps.get(0).reading(stored);
    if (first == null) {
      return new KernelPlan(pipeline, f.shapes, f.steps, stored, true);
    }
    List<GpuStep> steps = new ArrayList<>(f.steps);
    steps.set(0, first);
    return new KernelPlan(pipeline, f.shapes, List.copyOf(steps), stored, false);
  }

  /** Plans {@code pipeline} on inputs of shape {@code in}; rejects shapes the pipeline cannot take. */
  public static KernelPlan of(Pipeline pipeline, VolumeShape in) {
    return of(pipeline, in, true);
  }

  /**
   * Plans {@code pipeline}; with {@code fuseStages} false, every stage is its own kernel
   * (benchmarks compare the two).
   */
  public static KernelPlan of(Pipeline pipeline, VolumeShape in, boolean fuseStages) {
    List<VolumeShape> shapes = pipeline.shapes(in);
    List<Stage> stages = pipeline.stages();
    List<GpuStep> steps = new ArrayList<>();
    int i = 0;
    while (i < stages.size()) {
      GpuStep step = stages.get(i).gpu(stages, shapes, i, fuseStages);
      if (step.src() != i || step.dst() <= i || step.dst() > stages.size()) {
        throw new IllegalStateException("stage " + i + " (" + stages.get(i).name() + ") planned a kernel from buffer "
            + step.src() + " to " + step.dst() + "; expected from " + i + " to one of " + (i + 1) + ".." + stages.size());
      }
      steps.add(step);
      i = step.dst();
    }
    return new KernelPlan(pipeline, List.copyOf(shapes), List.copyOf(steps), ValueType.FLOAT32, false);
  }

  /** The values volumes arrive in: float32, or 8- or 16-bit values the device widens. */
  public ValueType stored() {
    return stored;
  }

  /** True when a widen kernel turns the stored values into float32 in buffer 0 before the first step. */
  public boolean widens() {
    return widens;
  }

  /** True when the first step reads the stored values themselves: buffer 0 holds them, at their width. */
  public boolean readsStored() {
    return !stored.isFloat32() && !widens;
  }

  /** Bytes of one volume as copied to the device: its stored values. */
  public long inputBytes() {
    return shapes.get(0).numel() * stored.itemSize();
  }

  /**
   * Device bytes of buffer {@code i} per volume: a used buffer's float32 volumes; buffer 0 holds the
   * stored values when the first step reads them (rounded up to whole 4-byte words).
   */
  public long bufferBytes(int i) {
    if (!used(i)) {
      return 0;
    }
    return i == 0 && readsStored() ? (inputBytes() + 3) & ~3L : shapes.get(i).bytes();
  }

  /**
   * Device bytes one volume of a batch needs: the used buffers, the narrowed output, and when the
   * device widens, the stored values before widening and the rescale pair.
   */
  public long deviceBytesPerVolume() {
    long b = 0;
    for (int i = 0; i < shapes.size(); i++) {
      b += bufferBytes(i);
    }
    b += narrowBufferBytes();
    if (!stored.isFloat32()) {
      b += 8 + (widens ? (inputBytes() + 3) & ~3L : 0);
    }
    return b;
  }

  public Pipeline pipeline() {
    return pipeline;
  }

  public List<VolumeShape> shapes() {
    return shapes;
  }

  public List<GpuStep> steps() {
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

  /**
   * Bytes of one output volume as it is copied back: float32, or the narrow output dtype (then a
   * last kernel, {@link #narrowKernel()}, writes it into a buffer of its own after the plan's buffers).
   */
  public long outputBytes() {
    return pipeline.outputBytes(shapes.get(shapes.size() - 1));
  }

  /** The kernel that narrows the output ({@code narrow_f16}, {@code narrow_bf16}), or null for float32 output. */
  public String narrowKernel() {
    switch (pipeline.output()) {
      case FLOAT16:
        return "narrow_f16";
      case BFLOAT16:
        return "narrow_bf16";
      default:
        return null;
    }
  }

  /** Per-volume device bytes of the narrowed output buffer, rounded up to whole 4-byte words (0 for float32 output). */
  public long narrowBufferBytes() {
    return narrowKernel() == null ? 0 : (outputBytes() + 3) & ~3L;
  }

  /** True when buffer {@code i} is read or written by some step (intermediates of a fused kernel are not). */
  public boolean used(int i) {
    return i == 0 || steps.stream().anyMatch(s -> s.src() == i || s.dst() == i);
  }

  /** The kernels in launch order, e.g. {@code pipeline_taps2_c3_c16}, or {@code widen -> avgpool_k3s2p1}. */
  public String describe() {
    String k = steps.isEmpty() ? "copy" : steps.stream().map(GpuStep::kernel).collect(Collectors.joining(" -> "));
    k = widens ? "widen -> " + k : k;
    return narrowKernel() == null ? k : k + " -> " + narrowKernel();
  }
}
