package io.volpool.op;

import java.util.List;

/**
 * How a pipeline runs over one volume in slabs along D. For a range of final output planes it
 * works back through the stages to the planes each stage reads (the composed halo: for fused then
 * avgpool3d, the avgpool window of fused outputs, each needing its stencil's input planes), so a
 * slab recomputes the few intermediate planes its neighbours also need instead of holding the
 * volume. Immutable; one per (pipeline, input shape).
 */
public final class SlabPlan {
  private final Pipeline pipeline;
  private final List<VolumeShape> shapes;

  /** A plan for {@code pipeline} on {@code input}; the identity pipeline's slabs are plane ranges copied as they are. */
  public SlabPlan(Pipeline pipeline, VolumeShape input) {
    this.pipeline = pipeline;
    this.shapes = pipeline.shapes(input);
  }

  public VolumeShape input() {
    return shapes.get(0);
  }

  public VolumeShape output() {
    return shapes.get(shapes.size() - 1);
  }

  /** The shape entering stage {@code i} (and {@code output()} at {@code i == stages}). */
  public VolumeShape shape(int i) {
    return shapes.get(i);
  }

  public Pipeline pipeline() {
    return pipeline;
  }

  /**
   * The windows of each stage that produce final output planes {@code [o0, o1)}: entry {@code i}
   * is stage {@code i}'s {@link Slab} (its input planes and the output planes the next stage reads).
   */
  public Slab[] slabs(int o0, int o1) {
    if (o0 < 0 || o1 > output().d() || o0 >= o1) {
      throw new IllegalArgumentException("output planes [" + o0 + ", " + o1 + ") outside [0, " + output().d() + ")");
    }
    int n = pipeline.stages().size();
    Slab[] out = new Slab[n];
    int lo = o0;
    int hi = o1;
    for (int i = n - 1; i >= 0; i--) {
      int[] r = pipeline.stages().get(i).inputPlanes(shapes.get(i), lo, hi);
      out[i] = new Slab(r[0], r[1] - r[0], lo, hi - lo);
      lo = r[0];
      hi = r[1];
    }
    return out;
  }

  /** The most planes stage {@code i}'s input window holds over slabs of {@code planes} output planes. */
  public int widestInput(int stage, int planes) {
    int od = output().d();
    int t = Math.min(planes, od);
    int most = 0;
    for (int o0 = 0; o0 < od; o0 += t) {
      int o1 = Math.min(od, o0 + t);
      most = Math.max(most, stage == 0 ? inputPlanes(o0, o1)[1] - inputPlanes(o0, o1)[0] : slabs(o0, o1)[stage].inDn());
    }
    return most;
  }

  /**
   * The most input planes one slab reads that the slab before it did not (the whole window for the
   * first slab), over slabs of {@code planes} output planes: what a run that keeps the shared planes
   * (the halo) where it computes, and brings only the new ones, must stage at once.
   */
  public int mostNewPlanes(int planes) {
    int od = output().d();
    int t = Math.max(1, Math.min(planes, od));
    int most = 0;
    int held = Integer.MIN_VALUE;
    for (int o0 = 0; o0 < od; o0 += t) {
      int[] w = inputPlanes(o0, Math.min(od, o0 + t));
      most = Math.max(most, w[1] - Math.max(held, w[0]));
      held = Math.max(held, w[1]);
    }
    return most;
  }

  /**
   * The most output planes per slab for which {@code fits} holds (it must hold for every smaller
   * count too: buffers grow with the planes), or 0 when not even one plane fits.
   */
  public int mostPlanes(java.util.function.IntPredicate fits) {
    if (!fits.test(1)) {
      return 0;
    }
    int lo = 1;
    int hi = output().d();
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (fits.test(mid)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /** The input planes {@code [lo, hi)} that final output planes {@code [o0, o1)} read. */
  public int[] inputPlanes(int o0, int o1) {
    Slab[] s = slabs(o0, o1);
    return s.length == 0 ? new int[] {o0, o1} : new int[] {s[0].inD0(), s[0].inD1()};
  }
}
