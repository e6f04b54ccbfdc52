package io.volpool.backend;

import io.volpool.op.SlabPlan;

/**
 * The rules that let a volume's output planes run as ranges in separate tasks and still come out
 * bit for bit as one run of the whole volume: a range starts and ends on a multiple of {@link #ALIGN}
 * planes (or at the volume's end), and a range's slabs are a whole run's slabs of a plane count that
 * divides its bounds. Pure arithmetic, used by the driver's planner and the task that runs a range.
 */
public final class SlabRanges {
  /** Ranges start on a multiple of this many output planes (or at 0 for volumes of fewer planes). */
  public static final int ALIGN = 64;

  private SlabRanges() {}

  /**
   * Ranges of about {@code planesPerRange} output planes covering {@code [0, od)}: each a multiple
   * of {@link #ALIGN} planes (the last ends at {@code od}); one range when the volume is no larger.
   */
  public static int[][] ranges(int od, int planesPerRange) {
    int r = Math.max(ALIGN, (planesPerRange / ALIGN) * ALIGN);
    int n = Math.max(1, (od + r - 1) / r);
    int[][] out = new int[n][];
    for (int i = 0; i < n; i++) {
      out[i] = new int[] {i * r, Math.min(od, (i + 1) * r)};
    }
    return out;
  }

  /**
   * {@link #ranges} of a volume of {@code od} output planes and {@code volumeBytes} of input, each reading
   * about {@code taskBytes}: how the driver sizes a volume's ranges to fill its tasks.
   */
  public static int[][] forTasks(int od, long volumeBytes, long taskBytes) {
    long perPlane = Math.max(1, volumeBytes / od);
    return ranges(od, (int) Math.min(Integer.MAX_VALUE, Math.max(1, taskBytes / perPlane)));
  }

  /**
   * The output planes per slab for range {@code [from, to)} of a volume of {@code plan}: {@code planes}
   * when the range's bounds are multiples of it, else the largest power of two below it that divides
   * both (the volume's end needs no alignment), so the range's slabs are slabs of a whole run.
   */
  public static int slabPlanes(SlabPlan plan, int planes, int from, int to) {
    int od = plan.output().d();
    int t = Math.max(1, Math.min(planes, od));
    if (aligned(from, to, od, t)) {
      return t;
    }
    int p = Integer.highestOneBit(t);
    while (p > 1 && !aligned(from, to, od, p)) {
      p >>= 1;
    }
    return p;
  }

  /** Whether slabs of {@code t} planes from 0 have boundaries at {@code from} and at {@code to} (or {@code to} is the end). */
  public static boolean aligned(int from, int to, int od, int t) {
    return from % t == 0 && (to == od || to % t == 0);
  }

  /** Checks a range's bounds for a run of {@code t}-plane slabs; names what is wrong. */
  public static void check(SlabPlan plan, int t, int from, int to) {
    int od = plan.output().d();
    if (from < 0 || to > od || from >= to) {
      throw new IllegalArgumentException("output planes [" + from + ", " + to + ") outside [0, " + od + ")");
    }
    if (!aligned(from, to, od, t)) {
      throw new IllegalArgumentException("output planes [" + from + ", " + to + ") do not start and end on slabs of " + t
          + " planes (a range's slabs must be a whole run's slabs, or its output would differ)");
    }
  }

  /**
   * What is wrong with {@code runs} ({@code {d0, d1}} each) as the output planes {@code [0, d)} of one volume,
   * each plane once: {@code "lacks output planes [a, b) of its d"} or {@code "holds output planes [a, b) twice"}
   * for the first gap or overlap; null when they tile it. The commit's check of ranges written by separate tasks.
   */
  public static String tilingProblem(java.util.List<long[]> runs, long d) {
    java.util.List<long[]> sorted = new java.util.ArrayList<>(runs);
    sorted.sort(java.util.Comparator.comparingLong((long[] r) -> r[0]).thenComparingLong(r -> r[1]));
    long next = 0;
    for (long[] r : sorted) {
      if (r[0] > next) {
        return "lacks output planes [" + next + ", " + r[0] + ") of its " + d;
      }
      if (r[0] < next) {
        return "holds output planes [" + r[0] + ", " + Math.min(next, r[1]) + ") twice";
      }
      next = r[1];
    }
    return next != d ? "lacks output planes [" + next + ", " + d + ") of its " + d : null;
  }
}
