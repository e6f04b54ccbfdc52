package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.junit.jupiter.api.Test;

class LocalTaskWarmUpTest {
  @Test
  void theWarmUpRunsOneEmptyTaskPerSlotAndOnlyOncePerContext() throws Exception {
    SparkContext sc = SparkTests.spark().sparkContext();
    AtomicInteger done = new AtomicInteger();
    SparkListener l = new SparkListener() {
      @Override
      public void onTaskEnd(SparkListenerTaskEnd e) {
        if (e.reason() instanceof org.apache.spark.Success$) {
          done.incrementAndGet();
        }
      }
    };
    sc.addSparkListener(l);
    try {
      Thread t = LocalTaskWarmUp.run(sc, 3);
      t.join(60_000);
      assertThat(t.isAlive()).as("the warm-up job ended").isFalse();
      // listener events arrive on Spark's bus thread, after the job
      for (long end = System.nanoTime() + 10_000_000_000L; done.get() < 3 && System.nanoTime() < end; ) {
        Thread.sleep(10);
      }
      assertThat(done.get()).as("successful warm-up tasks").isEqualTo(3);
      LocalTaskWarmUp.start(sc, 3); // runs, or not when an earlier job of this JVM warmed the context
      assertThat(LocalTaskWarmUp.start(sc, 3)).as("a second start in the same context").isNull();
    } finally {
      sc.removeSparkListener(l);
    }
  }
}
