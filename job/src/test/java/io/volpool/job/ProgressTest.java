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

  @Test
  void aRunningTaskMovesTheLineAndAFinishedOneIsNotCountedTwice() {
    SparkContext sc = SparkTests.spark().sparkContext();
    JobMetrics m = JobMetrics.register(sc);
    try (Progress p = new Progress(sc, m, 256, "volumes")) {
      assertThat(p.line()).startsWith("volpool progress: 0 of 256 volumes (0.0%)");
      p.onExecutorMetricsUpdate(new SparkListenerExecutorMetricsUpdate("0",
          scala.jdk.javaapi.CollectionConverters.asScala(List.of(new Tuple4<Object, Object, Object,
              scala.collection.immutable.Seq<AccumulableInfo>>(7L, 0, 0, infos(m, 72, 72 << 20)))).toList(),
          scala.collection.immutable.Map$.MODULE$.empty()));
      assertThat(p.line()).as("a running task's heartbeat").startsWith("volpool progress: 72 of 256 volumes (28.1%)");
      TaskInfo ti = new TaskInfo(7L, 0, 0, 0, 0L, "0", "localhost", org.apache.spark.scheduler.TaskLocality.ANY(), false);
      ti.setAccumulables(infos(m, 128, 128 << 20));
      // the job's accumulators already hold the finished task when its end event arrives: not counted again
      m.volumesRead().add(128);
      assertThat(p.line()).as("between the merge and the end event").startsWith("volpool progress: 72 of 256 volumes");
      p.onTaskEnd(new SparkListenerTaskEnd(0, 0, "ResultTask", org.apache.spark.Success$.MODULE$, ti, null, null));
      assertThat(p.line()).startsWith("volpool progress: 128 of 256 volumes (50.0%)");
      assertThat(p.finalLine()).startsWith("volpool progress: 128 of 256 volumes (50.0%)");
    }
  }
}
