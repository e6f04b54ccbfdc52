package io.volpool.backend;

/** Nanoseconds per {@link Phase}, added up by one task thread (not thread-safe). */
public final class PhaseTimes {
  private final long[] nanos = new long[Phase.values().length];

  public void add(Phase p, long ns) {
    nanos[p.ordinal()] += ns;
  }

  /** Adds the time since {@code startNanos} to {@code p} and returns now, for chaining. */
  public long lap(Phase p, long startNanos) {
    long now = System.nanoTime();
    nanos[p.ordinal()] += now - startNanos;
    return now;
  }

  public long get(Phase p) {
    return nanos[p.ordinal()];
  }

  public void addAll(PhaseTimes other) {
    for (int i = 0; i < nanos.length; i++) {
      nanos[i] += other.nanos[i];
    }
  }

  /** Adds these times to {@code to} and starts again from zero. */
  public void moveTo(PhaseTimes to) {
    to.addAll(this);
    java.util.Arrays.fill(nanos, 0);
  }
}
