package io.volpool.exec;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSink;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.SlabRun;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.VolumeShape;
import java.nio.FloatBuffer;

/**
 * The identity pipeline in slabs: planes read from the source straight into a heap window and handed
 * to the sink, no backend involved (nothing to compute). Lets a volume of any size be copied into
 * output rows slab by slab. Its window comes from the memory budget and goes back on {@link #close()}.
 */
final class CopySlabRun implements SlabRun {
  private final PlaneSource src;
  private final PlaneSink dst;
  private final PhaseTimes times;
  private final MemoryBudget budget;
  private final VolumeShape shape;
  private final int t;
  private final long bytes;
  private final float[] window;
  private int d0;
  private boolean closed;

  CopySlabRun(PlaneSource src, PlaneSink dst, int planes, MemoryBudget budget, PhaseTimes times) {
    this.src = src;
    this.dst = dst;
    this.times = times;
    this.budget = budget;
    this.shape = src.shape();
    long plane = (long) shape.c() * shape.h() * shape.w();
    this.t = (int) Math.max(1, Math.min(Math.min(planes, shape.d()), (Integer.MAX_VALUE - 8) / plane));
    this.bytes = plane * t * 4;
    long w0 = System.nanoTime();
    budget.acquire(bytes, MemoryBudget.Use.BATCHES, true, () -> "slabs of " + t + " planes of volume " + src.record()
        + " " + shape + " copied through (identity)");
    times.add(Phase.WAIT_BUDGET, System.nanoTime() - w0);
    try {
      this.window = new float[Math.toIntExact(plane * t)];
    } catch (RuntimeException | Error e) {
      budget.release(bytes, MemoryBudget.Use.BATCHES);
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
    if (d0 >= shape.d()) {
      return false;
    }
    int d1 = Math.min(shape.d(), d0 + t);
    int n = d1 - d0;
    int plane = shape.h() * shape.w();
    long r0 = System.nanoTime();
    // laid out [C, n, H, W]: channel c's planes at c * n * H * W
    src.read(d0, d1, FloatBuffer.wrap(window), 0, n * plane);
    times.add(Phase.READ, System.nanoTime() - r0);
    dst.write(d0, d1, FloatBuffer.wrap(window, 0, shape.c() * n * plane).slice());
    d0 = d1;
    return true;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      budget.release(bytes, MemoryBudget.Use.BATCHES);
    }
  }
}
