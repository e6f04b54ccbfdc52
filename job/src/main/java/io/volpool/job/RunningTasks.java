package io.volpool.job;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Task attempts of a context started and not yet ended. When a job fails, Spark aborts it at once but
 * leaves its other running attempts to finish (it kills them without interrupting their threads): such
 * an attempt still writes into the staging folder and aborts its own files there afterwards, so a
 * failed run waits for them before it removes the staging, or an empty folder outlives the run.
 */
final class RunningTasks extends SparkListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RunningTasks.class);
  private final SparkContext sc;
  private final AtomicInteger running = new AtomicInteger();

  RunningTasks(SparkContext sc) {
    this.sc = sc;
    sc.addSparkListener(this);
  }

  @Override
  public void onTaskStart(SparkListenerTaskStart e) {
    running.incrementAndGet();
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd e) {
    running.decrementAndGet();
  }

  /** Waits up to {@code millis} until no attempt runs; returns how many still do. */
  int awaitNone(long millis) {
    long until = System.nanoTime() + millis * 1_000_000L;
    boolean said = false;
    // a stopped context (a signal's shutdown) ends no more attempts: nothing to wait for
    while (running.get() > 0 && System.nanoTime() < until && !sc.isStopped()) {
      if (!said) {
        LOG.info("volpool: waiting for {} task attempt(s) still running (up to {} s) before cleaning up", running.get(),
            millis / 1000);
        said = true;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return Math.max(0, running.get());
  }

  @Override
  public void close() {
    sc.removeSparkListener(this);
  }
}
