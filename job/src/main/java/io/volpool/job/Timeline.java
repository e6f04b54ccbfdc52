package io.volpool.job;

import java.util.List;

/**
 * How a run went over time, from the driver's samples of volumes and bytes read (taken every
 * {@link Progress#SAMPLE_MILLIS} from finished tasks' end events and running tasks' heartbeats):
 * when the first task committed its output, the rate between 10% and 90% of the input (the steady
 * state, without start-up and tail; by the volumes read, or by the bytes where volumes run as ranges), and the
 * tail: from 90% of the input to the last task's commit.
 * Figures that a run too short or too coarse cannot give are -1. Immutable value.
 *
 * @param firstCommitSeconds from the start of the job to the first task's commit
 * @param steadyFromSeconds start of the steady window (the first sample at or above 10% of the input)
 * @param steadyToSeconds its end (the last sample at or below 90%)
 * @param steadyVolumesPerSecond volumes (or rows) per second in that window
 * @param steadyGbPerSecondIn input GB/s in that window
 * @param tailSeconds from the end of the steady window (90% of the input) to the end of the tasks (the last commit)
 */
public record Timeline(double firstCommitSeconds, double steadyFromSeconds, double steadyToSeconds,
    double steadyVolumesPerSecond, double steadyGbPerSecondIn, double tailSeconds) {

  /** One sample: nanoseconds since the start, volumes (or rows) and bytes read by then. */
  public record Sample(long nanos, long volumes, long bytes) {}

  /**
   * @param samples in time order
   * @param total volumes the input holds, or -1 when unknown (then the last sample's count)
   * @param totalBytes input bytes the tasks read when volumes run as ranges (a range counts its volume only when the
   *     range from plane 0 ends, so a few volumes give no window by count), else -1: the window is then found by
   *     the bytes read against it
   * @param endNanos when the tasks ended, since the start
   * @param firstCommitNanos when the first task committed, since the start; -1 if none did
   */
  public static Timeline of(List<Sample> samples, long total, long totalBytes, long endNanos, long firstCommitNanos) {
    double first = firstCommitNanos < 0 ? -1 : firstCommitNanos / 1e9;
    if (samples.isEmpty()) {
      return new Timeline(first, -1, -1, -1, -1, -1);
    }
    boolean byBytes = totalBytes > 0;
    java.util.function.ToLongFunction<Sample> done = byBytes ? Sample::bytes : Sample::volumes;
    long all = byBytes ? totalBytes : total >= 0 ? total : samples.get(samples.size() - 1).volumes();
    Sample from = null;
    Sample to = null;
    for (Sample s : samples) {
      if (from == null && done.applyAsLong(s) >= 0.1 * all) {
        from = s;
      }
      if (done.applyAsLong(s) <= 0.9 * all) {
        to = s;
      }
    }
    double tail = to == null ? -1 : Math.max(0, (endNanos - to.nanos()) / 1e9);
    if (from == null || to == null || to.nanos() <= from.nanos() || done.applyAsLong(to) <= done.applyAsLong(from)) {
      return new Timeline(first, -1, -1, -1, -1, tail);
    }
    double secs = (to.nanos() - from.nanos()) / 1e9;
    return new Timeline(first, from.nanos() / 1e9, to.nanos() / 1e9, (to.volumes() - from.volumes()) / secs,
        (to.bytes() - from.bytes()) / secs / 1e9, tail);
  }
}
