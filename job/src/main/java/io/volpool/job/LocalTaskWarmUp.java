package io.volpool.job;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * In local mode, one small Spark job of empty tasks, one per task slot, run on a thread of its own
 * while the driver plans the real job: the executor's first tasks pay for cold code that every task
 * of the first wave otherwise pays at once (task threads created, Spark's task and closure
 * deserialization, the Scala lambdas' {@code $deserializeLambda$} linking of {@code RDD} and
 * {@code JavaRDDLike}: 0.15 s of each of sixteen first tasks in the H200 profile of the 1,024-volume
 * job), and the driver's own first job submission (the RDD scope's JSON, the closure serializer).
 * Before that it parses Hadoop's default resources ({@link io.volpool.io.ShippedConf#warm}), which
 * the driver needs to ship the job's configuration.
 * Its tasks carry none of the job's accumulators, so the job's progress and summary do not count
 * them ({@link Progress}). Started and forgotten: a failure is logged at debug level, and the real
 * job meets any real problem itself.
 */
final class LocalTaskWarmUp {
  private static final Logger LOG = LoggerFactory.getLogger(LocalTaskWarmUp.class);

  private LocalTaskWarmUp() {}

  /** The warm-up started last, which a run ending before its job waits for ({@link #awaitEnd}). */
  private static volatile Thread last;

  /**
   * Waits (up to {@code millis}) for the warm-up job to end: a run that ends before its own job (nothing to do, a
   * refusal) stops the context only then, or the warm-up's tasks fail against a stopped context with ERROR lines
   * and traces an Airflow retry would read as a failure.
   */
  static void awaitEnd(long millis) {
    Thread t = last;
    if (t != null) {
      try {
        t.join(millis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** The context warmed last (weakly: a stopped context is not kept): a later job in it finds its executor warm. */
  private static java.lang.ref.WeakReference<SparkContext> warmed = new java.lang.ref.WeakReference<>(null);

  /**
   * Starts the warm-up job of {@code slots} empty tasks, once per Spark context (an application
   * that runs several volpool jobs in one session warms for the first).
   *
   * @return its thread, or null when this context was warmed already
   */
  static Thread start(SparkContext sc, int slots) {
    synchronized (LocalTaskWarmUp.class) {
      if (warmed.get() == sc) {
        return null;
      }
      warmed = new java.lang.ref.WeakReference<>(sc);
    }
    return run(sc, slots);
  }

  /** Runs the warm-up job now, on a thread of its own: {@link #start}'s work without its once-per-context rule. */
  static Thread run(SparkContext sc, int slots) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(sc);
    Thread t = new Thread(() -> {
      long t0 = System.nanoTime();
      try {
        // first Hadoop's defaults, which the driver's ShippedConf.shrink needs while it plans (50 ms on its thread)
        io.volpool.io.ShippedConf.warm();
        sc.setJobDescription("volpool warm-up: " + slots + " empty tasks before the job's own");
        List<Integer> parts = new ArrayList<>();
        for (int i = 0; i < slots; i++) {
          parts.add(i);
        }
        // the same path as the job's tasks: mapPartitionsToPair on a parallelized collection
        jsc.parallelize(parts, slots).mapPartitionsToPair(it -> Collections.<scala.Tuple2<Void, Void>>emptyIterator())
            .count();
        LOG.info("volpool: Spark's task path warmed by {} empty tasks in {} ms", slots, (System.nanoTime() - t0) / 1_000_000);
      } catch (Exception e) {
        // Spark's own exceptions are checked ones thrown from Scala (a context stopped meanwhile, say)
        LOG.debug("local task warm-up failed (the job's tasks start cold): {}", e.toString());
      }
    }, "volpool-task-warm-up");
    t.setDaemon(true);
    t.start();
    last = t;
    return t;
  }
}
