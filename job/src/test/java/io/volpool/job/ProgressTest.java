package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.spark.JobMetrics;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.SparkListenerExecutorMetricsUpdate;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.TaskInfo;
import org.junit.jupiter.api.Test;
import scala.Option;
import scala.Tuple4;

/** The progress line counts each task once: from its heartbeats while it runs, from its end event after. */
class ProgressTest {
  static AccumulableInfo info(long id, long value) {
    return new AccumulableInfo(id, Option.empty(), Option.apply(value), Option.apply(value), false, false,
        Option.empty());
  }

  static scala.collection.immutable.Seq<AccumulableInfo> infos(JobMetrics m, long volumes, long bytes) {
    return scala.jdk.javaapi.CollectionConverters.asScala(List.of(info(m.volumesRead().id(), volumes),
        info(m.bytesIn().id(), bytes))).toList();
  }

  /** An executor's heartbeat with task {@code taskId}'s counts so far. */
  static SparkListenerExecutorMetricsUpdate heartbeat(JobMetrics m, long taskId, long volumes, long bytes) {
    return new SparkListenerExecutorMetricsUpdate("0", scala.jdk.javaapi.CollectionConverters.asScala(List.of(
        new Tuple4<Object, Object, Object, scala.collection.immutable.Seq<AccumulableInfo>>(taskId, 0, 0,
            infos(m, volumes, bytes)))).toList(), scala.collection.immutable.Map$.MODULE$.empty());
  }

  static TaskInfo taskInfo(long taskId) {
    return new TaskInfo(taskId, 0, 0, 0, 0L, "0", "localhost", org.apache.spark.scheduler.TaskLocality.ANY(), false);
  }

  @Test
  void aRunningTaskMovesTheLineAndAFinishedOneIsNotCountedTwice() {
    SparkContext sc = SparkTests.spark().sparkContext();
    JobMetrics m = JobMetrics.register(sc);
    try (Progress p = new Progress(sc, m, 256, "volumes", System.nanoTime())) {
      assertThat(p.line()).startsWith("volpool progress: 0 of 256 volumes (0.0%)");
      p.onExecutorMetricsUpdate(heartbeat(m, 7L, 72, 72 << 20));
      assertThat(p.line()).as("a running task's heartbeat").startsWith("volpool progress: 72 of 256 volumes (28.1%)");
      TaskInfo ti = taskInfo(7L);
      ti.setAccumulables(infos(m, 128, 128 << 20));
      // the job's accumulators already hold the finished task when its end event arrives: not counted again
      m.volumesRead().add(128);
      assertThat(p.line()).as("between the merge and the end event").startsWith("volpool progress: 72 of 256 volumes");
      p.onTaskEnd(new SparkListenerTaskEnd(0, 0, "ResultTask", org.apache.spark.Success$.MODULE$, ti, null, null));
      assertThat(p.line()).startsWith("volpool progress: 128 of 256 volumes (50.0%)");
      assertThat(p.finalLine()).startsWith("volpool progress: 128 of 256 volumes (50.0%)");
    }
  }

  @Test
  void badRecordsSetAsideCountAsDone() {
    SparkContext sc = SparkTests.spark().sparkContext();
    JobMetrics m = JobMetrics.register(sc);
    try (Progress p = new Progress(sc, m, 14, "volumes", System.nanoTime())) {
      TaskInfo ti = taskInfo(9L);
      ti.setAccumulables(scala.jdk.javaapi.CollectionConverters.asScala(List.of(info(m.volumesRead().id(), 12),
          info(m.bytesIn().id(), 12 << 10), info(m.quarantined().id(), 2))).toList());
      p.onTaskEnd(new SparkListenerTaskEnd(0, 0, "ResultTask", org.apache.spark.Success$.MODULE$, ti, null, null));
      assertThat(p.line()).as("a finished task's bad records set aside").startsWith("volpool progress: 14 of 14 volumes (100.0%)");
      m.volumesRead().add(12);
      m.quarantined().add(2);
      assertThat(p.finalLine()).startsWith("volpool progress: 14 of 14 volumes (100.0%)");
    }
  }

  @Test
  void rangesOfAVolumeMoveTheLineByTheBytesTheyRead() {
    // one .npy volume as ranges in several tasks counts as read only when its range from plane 0 ends
    SparkContext sc = SparkTests.spark().sparkContext();
    JobMetrics m = JobMetrics.register(sc);
    try (Progress p = new Progress(sc, m, 1, "volumes", System.nanoTime(), 400L << 20)) {
      p.onExecutorMetricsUpdate(heartbeat(m, 7L, 0, 100 << 20));
      assertThat(p.line()).startsWith("volpool progress: 104.9 MB of 419.4 MB read (25.0%), ").contains("left");
      TaskInfo ti = taskInfo(7L);
      ti.setAccumulables(infos(m, 1, 101 << 20));
      p.onTaskEnd(new SparkListenerTaskEnd(0, 0, "ResultTask", org.apache.spark.Success$.MODULE$, ti, null, null));
      assertThat(p.line()).as("the volume counted at its first range: not done, and not said to be").startsWith(
          "volpool progress: 105.9 MB of 419.4 MB read (25.3%), ").doesNotContain("volumes");
    }
  }

  @Test
  void aTaskWithoutTheJobsAccumulatorsIsNotItsFirstCommit() throws Exception {
    // the local warm-up's empty tasks (LocalTaskWarmUp) may end while the job runs: they are not the job's first commit
    SparkContext sc = SparkTests.spark().sparkContext();
    JobMetrics m = JobMetrics.register(sc);
    try (Progress p = new Progress(sc, m, 256, "volumes", System.nanoTime())) {
      TaskInfo warm = new TaskInfo(8L, 0, 0, 0, 0L, "0", "localhost", org.apache.spark.scheduler.TaskLocality.ANY(), false);
      warm.setAccumulables(scala.jdk.javaapi.CollectionConverters.asScala(List.of(info(m.volumesRead().id() + 1000, 5)))
          .toList());
      p.onTaskEnd(new SparkListenerTaskEnd(0, 0, "ResultTask", org.apache.spark.Success$.MODULE$, warm, null, null));
      Thread.sleep(20);
      TaskInfo ours = new TaskInfo(9L, 0, 0, 0, 0L, "0", "localhost", org.apache.spark.scheduler.TaskLocality.ANY(), false);
      ours.setAccumulables(infos(m, 0, 0)); // a task of the job that read nothing still carries its accumulators
      p.onTaskEnd(new SparkListenerTaskEnd(1, 0, "ResultTask", org.apache.spark.Success$.MODULE$, ours, null, null));
      p.finalLine();
      // Timeline keeps the first commit as seconds since the start: at least the 20 ms waited after the warm-up task
      double first = p.timeline().firstCommitSeconds();
      assertThat(first).isGreaterThanOrEqualTo(0.02);
    }
  }

  static Timeline.Sample at(double secs, long volumes) {
    return new Timeline.Sample((long) (secs * 1e9), volumes, volumes * 1_000_000L);
  }

  @Test
  void theSteadyStateIsTheRateBetweenTenAndNinetyPercentAndTheTailTheLastTenPercent() {
    // 2 s of start-up with nothing read, 100 volumes/s from 2 s to 12 s, all 1,000 read at 12 s, tasks end at 14 s
    List<Timeline.Sample> s = new java.util.ArrayList<>();
    for (int i = 0; i <= 48; i++) {
      double t = i * 0.25;
      s.add(at(t, t < 2 ? 0 : Math.min(1000, (long) Math.round((t - 2) * 100))));
    }
    s.add(at(14, 1000));
    Timeline t = Timeline.of(s, 1000, -1, 14_000_000_000L, 3_500_000_000L);
    assertThat(t.firstCommitSeconds()).isEqualTo(3.5);
    assertThat(t.steadyFromSeconds()).isEqualTo(3.0); // 100 volumes, 10%
    assertThat(t.steadyToSeconds()).isEqualTo(11.0); // 900 volumes, 90%
    assertThat(t.steadyVolumesPerSecond()).isCloseTo(100.0, org.assertj.core.api.Assertions.within(1e-9));
    assertThat(t.steadyGbPerSecondIn()).isCloseTo(0.1, org.assertj.core.api.Assertions.within(1e-9));
    assertThat(t.tailSeconds()).as("from 90% at 11 s to the last commit at 14 s").isEqualTo(3.0);
    // the whole-run rate would be 1000 / 14 = 71 volumes/s: the steady figure leaves start-up and tail out
  }

  @Test
  void oneVolumeRunAsRangesHasItsSteadyStateInBytes() {
    // one .npy volume of 10 GB in ranges: the volume counts only when its range from plane 0 ends (at 9 s here),
    // while the bytes grow at 1 GB/s from 1 s to 11 s; by count there is no window, by bytes 2 s to 10 s
    List<Timeline.Sample> s = new java.util.ArrayList<>();
    for (int i = 0; i <= 48; i++) {
      double t = i * 0.25;
      long bytes = t < 1 ? 0 : Math.min(10_000_000_000L, Math.round((t - 1) * 1e9));
      s.add(new Timeline.Sample((long) (t * 1e9), t >= 9 ? 1 : 0, bytes));
    }
    assertThat(Timeline.of(s, 1, -1, 12_000_000_000L, 2_000_000_000L).steadyGbPerSecondIn())
        .as("by the volume's count alone").isEqualTo(-1);
    Timeline t = Timeline.of(s, 1, 10_000_000_000L, 12_000_000_000L, 2_000_000_000L);
    assertThat(t.steadyFromSeconds()).isEqualTo(2.0); // 1 GB, 10%
    assertThat(t.steadyToSeconds()).isEqualTo(10.0); // 9 GB, 90%
    assertThat(t.steadyGbPerSecondIn()).isCloseTo(1.0, org.assertj.core.api.Assertions.within(1e-9));
    assertThat(t.tailSeconds()).isEqualTo(2.0);
  }

  @Test
  void aRunTooShortToSampleSaysSo() {
    Timeline t = Timeline.of(List.of(at(0.25, 0), at(0.5, 10)), 10, -1, 600_000_000L, -1);
    assertThat(t.steadyVolumesPerSecond()).isEqualTo(-1);
    assertThat(t.firstCommitSeconds()).isEqualTo(-1);
    // the last sample at or below 90% is the one at 0.25 s: the tail runs from there to the end at 0.6 s
    assertThat(t.tailSeconds()).isCloseTo(0.35, org.assertj.core.api.Assertions.within(1e-9));
    assertThat(Timeline.of(List.of(), 10, -1, 0, -1).steadyVolumesPerSecond()).isEqualTo(-1);
  }
}
