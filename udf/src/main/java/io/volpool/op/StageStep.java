package io.volpool.op;

/**
 * A {@link GpuStep} of one stage (buffer {@code src} to {@code src + 1}) whose launch is a function of
 * the batch size and the window: what a pool operator's kernels need, without a record per kernel.
 */
public record StageStep(String kernel, int src, Launcher launcher) implements GpuStep {
  /** The arguments and grid of the kernel for {@code n} volumes on window {@code w}. */
  @FunctionalInterface
  public interface Launcher {
    GpuLaunch launch(int n, Slab w);
  }

  @Override
  public int dst() {
    return src + 1;
  }

  @Override
  public GpuLaunch launch(int n, Slab w) {
    return launcher.launch(n, w);
  }
}
