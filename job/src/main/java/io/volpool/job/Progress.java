package io.volpool.job;

import io.volpool.spark.JobMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorMetricsUpdate;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple4;

/**
 * Progress in the driver's log every few seconds while the job runs: volumes done of the total,
 * GB/s and volumes/s, and the time left. Finished tasks count through the job's accumulators;
 * running tasks through the values their executors send with each heartbeat, so the figure moves
 * while long tasks run. Started and stopped by {@link VolpoolJob}.
 */
final class Progress extends SparkListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Progress.class);
  static final long EVERY_MILLIS = 5_000;
  static final int FIRST_LINES = 5;
  /** How often the counts are sampled for the run's {@link Timeline}. */
  static final long SAMPLE_MILLIS = 250;

  private final SparkContext sc;
  private final JobMetrics m;
  private final long total;
  private final String unit;
  private final long started;
  private final Map<Long, long[]> running = new ConcurrentHashMap<>();
  private final Thread thread;
  private volatile boolean stop;
  private final List<Timeline.Sample> samples = new ArrayList<>();
  private volatile long firstCommitNanos = -1;

  /**
   * @param total volumes expected (Parquet: from the footers), or -1 when unknown (.npy: counted as read)
   * @param unit what is counted: {@code volumes}, or {@code rows} where volumes are stored across rows
   * @param started {@link System#nanoTime()} at the start of the run, from which elapsed times count
   */
  Progress(SparkContext sc, JobMetrics m, long total, String unit, long started) {
    this(sc, m, total, unit, started, -1);
  }

  /**
   * As above; with {@code totalBytes} positive (volumes spread over several tasks as ranges, which count
   * their volume only when the range from plane 0 ends), the share done and the time left come from the
   * bytes read against it instead of the volumes.
   */
  Progress(SparkContext sc, JobMetrics m, long total, String unit, long started, long totalBytes) {
    this.totalBytes = totalBytes;
    this.started = started;
    this.sc = sc;
    this.m = m;
    this.total = total;
    this.unit = unit;
    sc.addSparkListener(this);
    thread = new Thread(this::loop, "volpool-progress");
    thread.setDaemon(true);
    thread.start();
  }

  /** Input bytes the tasks will read when volumes run as ranges, else -1. */
  private final long totalBytes;

  /** Volumes and bytes of finished tasks, from their end events (so never counted twice with a heartbeat's). */
  private final long[] finished = new long[2];

  @Override
  public void onExecutorMetricsUpdate(SparkListenerExecutorMetricsUpdate u) {
    scala.collection.Iterator<Tuple4<Object, Object, Object, scala.collection.immutable.Seq<AccumulableInfo>>> it =
        u.accumUpdates().iterator();
    while (it.hasNext()) {
      Tuple4<Object, Object, Object, scala.collection.immutable.Seq<AccumulableInfo>> t = it.next();
      long[] v = counts(t._4());
      synchronized (finished) {
        running.put((Long) t._1(), v);
      }
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd e) {
    long[] v = counts(e.taskInfo().accumulables());
    synchronized (finished) {
      running.remove(e.taskInfo().taskId());
      // only the job's own tasks, which carry its accumulators (not the local warm-up's, LocalTaskWarmUp)
      if (v[2] == 1 && e.reason() instanceof org.apache.spark.Success$) {
        finished[0] += v[0];
        finished[1] += v[1];
        if (firstCommitNanos < 0) {
          firstCommitNanos = System.nanoTime() - started; // a task ends successfully only after its commit
        }
      }
    }
  }

  /**
   * Volumes read (and bad records set aside) and bytes read in one task's accumulator values, and 1 when they are the
   * job's (its accumulators are there).
   */
  private long[] counts(scala.collection.Seq<AccumulableInfo> infos) {
    long[] v = new long[3];
    scala.collection.Iterator<AccumulableInfo> ai = infos.iterator();
    while (ai.hasNext()) {
      AccumulableInfo a = ai.next();
      if (a.update().isEmpty() || !(a.update().get() instanceof Long val)) {
        continue;
      }
      if (a.id() == m.volumesRead().id()) {
        v[0] += val;
        v[2] = 1;
      } else if (a.id() == m.quarantined().id()) {
        // bad records set aside are done with too (spark.volpool.badRecords.path)
        v[0] += val;
      } else if (a.id() == m.bytesIn().id()) {
        v[1] = val;
      }
    }
    return v;
  }

  private void loop() {
    long nextLine = started + 1_000_000_000L;
    for (int line = 0; !stop; ) {
      try {
        Thread.sleep(SAMPLE_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
      long now = System.nanoTime();
      long[] c = counts();
      synchronized (samples) {
        samples.add(new Timeline.Sample(now - started, c[0], c[1]));
      }
      // every second at first, so a short run shows its progress too; then every few seconds
      if (!stop && now >= nextLine) {
        LOG.info(line());
        line++;
        nextLine = now + (line < FIRST_LINES ? 1_000_000_000L : EVERY_MILLIS * 1_000_000L);
      }
    }
  }

  /** The run's timeline; call after {@link #finalLine}, when the tasks have ended. */
  Timeline timeline() {
    synchronized (samples) {
      return Timeline.of(List.copyOf(samples), total, totalBytes, endNanos, firstCommitNanos);
    }
  }

  private long endNanos;

  /** Volumes and bytes read: finished tasks from their end events plus running ones from their last heartbeat. */
  private long[] counts() {
    synchronized (finished) {
      long vols = finished[0];
      long bytes = finished[1];
      for (long[] v : running.values()) {
        vols += v[0];
        bytes += v[1];
      }
      return new long[] {vols, bytes};
    }
  }

  private volatile boolean done;

  /** The last line, once the job's stage has ended. */
  String finalLine() {
    done = true;
    endNanos = System.nanoTime() - started;
    synchronized (samples) {
      samples.add(new Timeline.Sample(endNanos, m.volumesRead().value(), m.bytesIn().value()));
    }
    return line();
  }

  /** The progress line now. */
  String line() {
    long vols;
    long bytes;
    if (done) {
      // the job's accumulators hold every successful task
      vols = m.volumesRead().value() + m.quarantined().value();
      bytes = m.bytesIn().value();
    } else {
      // finished tasks from their end events plus running ones from their last heartbeat: each task once
      long[] c = counts();
      vols = c[0];
      bytes = c[1];
    }
    double secs = Math.max(1e-9, (System.nanoTime() - started) / 1e9);
    double rate = vols / secs;
    boolean byBytes = totalBytes > 0;
    StringBuilder sb = new StringBuilder("volpool progress: ");
    if (byBytes) {
      // a volume spread as ranges over tasks counts as read when its first range ends: only bytes say how far it is
      sb.append(size(Math.min(bytes, totalBytes))).append(" of ").append(size(totalBytes))
          .append(String.format(" read (%.1f%%)", Math.min(100.0, 100.0 * bytes / totalBytes)))
          .append(", ").append(throughput(bytes / secs)).append(" in");
    } else {
      sb.append(String.format("%,d", vols));
      if (total >= 0) {
        sb.append(" of ").append(String.format("%,d", total)).append(' ').append(unit);
        sb.append(String.format(" (%.1f%%)", total == 0 ? 100.0 : 100.0 * vols / total));
      } else {
        sb.append(' ').append(unit);
      }
      sb.append(", ").append(throughput(bytes / secs)).append(String.format(" in, %,.0f %s/s", rate, unit));
    }
    // the rate of the last RECENT_SECONDS: start-up (and a slow first wave) does not stretch the estimate
    double recent = byBytes ? recentRate(bytes, Timeline.Sample::bytes) : recentRate(vols, Timeline.Sample::volumes);
    long todo = byBytes ? totalBytes : total;
    long now = byBytes ? bytes : vols;
    if (todo > 0 && recent > 0 && now < todo) {
      sb.append(String.format(", about %s left", duration((todo - now) / recent)));
    }
    return sb.append(String.format(", %s elapsed", duration(secs))).toString();
  }

  /** The window of the rate behind the time left. */
  static final double RECENT_SECONDS = 30;

  /**
   * Volumes (or bytes: what {@code of} takes from a sample) per second over the last {@link #RECENT_SECONDS}
   * of samples (all of them in a shorter run).
   */
  private double recentRate(long vols, java.util.function.ToLongFunction<Timeline.Sample> of) {
    long now = System.nanoTime() - started;
    Timeline.Sample from = null;
    synchronized (samples) {
      for (int i = samples.size() - 1; i >= 0; i--) {
        Timeline.Sample smp = samples.get(i);
        if (now - smp.nanos() > RECENT_SECONDS * 1e9) {
          break;
        }
        from = smp;
      }
    }
    if (from == null || now - from.nanos() < 1e9 || vols <= of.applyAsLong(from)) {
      double secs = Math.max(1e-9, now / 1e9);
      return vols / secs;
    }
    return (vols - of.applyAsLong(from)) / ((now - from.nanos()) / 1e9);
  }

  static String duration(double secs) {
    long s = Math.round(secs);
    return s >= 3600 ? String.format("%dh%02dm", s / 3600, s / 60 % 60) : s >= 60 ? String.format("%dm%02ds", s / 60, s % 60)
        : s + " s";
  }

  @Override
  public void close() {
    stop = true;
    thread.interrupt();
    sc.removeSparkListener(this);
  }

  /** A byte count in the unit that shows it: {@code 1.23 GB}, {@code 45.6 MB}, {@code 7.8 kB}. */
  static String size(long bytes) {
    return bytes >= 1e9 ? String.format(java.util.Locale.ROOT, "%.2f GB", bytes / 1e9)
        : bytes >= 1e6 ? String.format(java.util.Locale.ROOT, "%.1f MB", bytes / 1e6)
        : String.format(java.util.Locale.ROOT, "%.1f kB", bytes / 1e3);
  }

  /** Bytes per second in the unit that shows them: {@code 1.23 GB/s}, else {@code 45.6 MB/s} (never {@code 0.00 GB/s}). */
  static String throughput(double bytesPerSecond) {
    return bytesPerSecond >= 1e9 ? String.format(java.util.Locale.ROOT, "%.2f GB/s",
        bytesPerSecond / 1e9) : bytesPerSecond >= 1e6 || bytesPerSecond == 0 ? String.format(java.util.Locale.ROOT, "%.1f MB/s",
        bytesPerSecond / 1e6) : String.format(java.util.Locale.ROOT, "%.1f kB/s", bytesPerSecond / 1e3);
  }
}
