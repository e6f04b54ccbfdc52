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
}
