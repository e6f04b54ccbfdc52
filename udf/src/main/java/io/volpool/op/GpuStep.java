package io.volpool.op;

/**
 * One CUDA kernel launch of a pipeline, described in plain Java (no native types), so the GPU
 * backend launches any operator without naming it and the choice of kernel is tested without a GPU.
 * Reads buffer {@code src()} and writes buffer {@code dst()} (buffer {@code i} holds the volumes
 * entering stage {@code i}); a step that fuses stages skips the buffers in between. Immutable.
 */
public interface GpuStep {
  /** The kernel's entry point in {@code volpool.cu}. */
  String kernel();

  int src();

  int dst();

  /**
   * The launch for {@code n} volumes on window {@code w} (input planes of buffer {@code src()},
   * output planes of buffer {@code dst()}): the arguments in the kernel's order and the grid.
   */
  GpuLaunch launch(int n, Slab w);

  /**
   * This step reading the batch's values as stored ({@code t}: 8 or 16 bits, widened and rescaled in
   * the kernel's own loads, its launch then passing {@link GpuLaunch.Arg.Rescale}), or null when its
   * kernel reads float32 alone (then a widen kernel runs first). Asked only of a plan's first step.
   */
  default GpuStep reading(io.volpool.format.ValueType t) {
    return t.isFloat32() ? this : null;
  }
}
