package io.volpool.backend;

/** Where a slabbed run puts its output: plane ranges of every channel, in order along D. */
@FunctionalInterface
public interface PlaneSink {
  /**
   * Takes output planes {@code [o0, o1)} of every channel, laid out {@code [C, o1 - o0, H, W]} from
   * index 0 of {@code y} (valid only during the call; pinned memory on the GPU). Calls come in order,
   * each starting where the last ended.
   */
  void write(int o0, int o1, java.nio.FloatBuffer y);
}
