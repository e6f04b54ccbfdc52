package io.volpool.backend;

/**
 * One volume through a pipeline in slabs along D, on one backend: each {@link #step()} reads the
 * input planes the next slab needs from its {@link PlaneSource} (the halo it shares with the last
 * slab is kept, not read again), runs every stage on that window and hands the slab's output planes
 * to its {@link PlaneSink}, in order. Its buffers come from the memory budget when it starts and go
 * back on {@link #close()}. Driven by one task thread.
 */
public interface SlabRun extends AutoCloseable {
  /** Output planes per slab (the last may have fewer). */
  int planes();

  /** Host bytes the run holds from the memory budget. */
  long bytes();

  /**
   * Runs the next slab; false once every output plane has been handed over. A backend may hand a
   * slab's output to the sink during the next call (while its device runs the next slab), so callers
   * call until false; the sink sees every slab, in order, before then.
   */
  boolean step();

  /** Gives the buffers back; safe to call twice, also after a failure. */
  @Override
  void close();
}
