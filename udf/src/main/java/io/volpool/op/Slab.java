package io.volpool.op;

/**
 * A window along D of one stage's work: the buffer holds input planes {@code [inD0, inD0 + inDn)}
 * of every channel, laid out {@code [C, inDn, H, W]}, and the kernel writes output planes
 * {@code [outD0, outD0 + outDn)} of every channel as {@code [C, outDn, H', W']}. Indices are those
 * of the whole volume, so a kernel computes each output element exactly as it does for the whole
 * volume: the window changes where values are stored, never the arithmetic.
 */
public record Slab(int inD0, int inDn, int outD0, int outDn) {
  public Slab {
    if (inD0 < 0 || inDn < 1 || outD0 < 0 || outDn < 1) {
      throw new IllegalArgumentException("slab needs non-negative starts and at least one plane, got input planes ["
          + inD0 + ", " + (inD0 + inDn) + ") and output planes [" + outD0 + ", " + (outD0 + outDn) + ")");
    }
  }

  /** The whole volume: every input plane, every output plane. */
  public static Slab whole(VolumeShape in, VolumeShape out) {
    return new Slab(0, in.d(), 0, out.d());
  }

  public int inD1() {
    return inD0 + inDn;
  }

  public int outD1() {
    return outD0 + outDn;
  }

  /** The slab's share of a volume of {@code s}: the same C, H, W and {@code inDn} planes. */
  public static long floats(VolumeShape s, int planes) {
    return (long) s.c() * planes * s.h() * s.w();
  }
}
