package io.volpool.job.commit;

import java.io.IOException;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * The named points of a run where the kill-point tests stop the driver's JVM, as storage engines test their
 * commit: a test sets the system property {@code volpool.test.killAt} to {@code POINT} or {@code POINT:TERM} (default
 * SIGKILL) and the run sends that signal to its own process when it gets there ({@code POINT:SLEEP=N}: it waits
 * N seconds there instead, for a concurrent run). Not a user setting: without
 * the property every {@link #reach} returns at once.
 */
public final class KillPoints {
  /** The system property naming the point and signal, e.g. {@code -Dvolpool.test.killAt=moved_in:TERM}. */
  public static final String PROPERTY = io.volpool.conf.InternalProperties.KILL_AT.key();
  /** The plan is made and the output prepared (its staging and owner exist); no task ran. */
  public static final String PLANNED = "planned";
  /** The first task committed. */
  public static final String FIRST_TASK = "first_task";
  /** Half of the tasks committed. */
  public static final String HALF_TASKS = "half_tasks";
  /** Every task committed and Spark's job commit ran: the staging holds the whole result. */
  public static final String JOB_COMMITTED = "job_committed";
  /** The commit moved the old output aside (overwrite, append). */
  public static final String MOVED_ASIDE = "moved_aside";
  /** The commit moved the new files in (append: the data files; overwrite: the staging renamed to the output). */
  public static final String MOVED_IN = "moved_in";
  /** An append's manifest is in the output moved aside: its commit point. */
  public static final String MANIFEST_WRITTEN = "manifest_written";
  /** An append's output is back in place. */
  public static final String MOVED_BACK = "moved_back";
  /** The run's status file is written (the run is over but for its exit). */
  public static final String STATUS_WRITTEN = "status_written";

  private KillPoints() {}

  private static String[] setting() {
    String at = io.volpool.conf.InternalProperties.KILL_AT.value();
    if (at == null || at.isBlank()) {
      return null;
    }
    String[] p = at.split(":", 2);
    return new String[] {p[0].trim().toLowerCase(Locale.ROOT), p.length > 1 ? p[1].trim().toUpperCase(Locale.ROOT) : "KILL"};
  }

  /** Sends the set signal to this JVM if {@code point} is the one set; returns (SIGTERM: while the handlers run). */
  public static void reach(String point) {
    String[] at = setting();
    if (at == null || !at[0].equals(point)) {
      return;
    }
    if (at[1].startsWith("SLEEP")) {
      // SLEEP=N: the run waits N seconds there (another run commits meanwhile)
      System.err.println("volpool: test point " + point + " reached: waiting " + at[1].substring(6) + " s");
      try {
        Thread.sleep(Long.parseLong(at[1].substring(6)) * 1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return;
    }
    System.err.println("volpool: test kill point " + point + " reached: sending SIG" + at[1] + " to this process");
    try {
      new ProcessBuilder("kill", "-" + at[1], String.valueOf(ProcessHandle.current().pid())).inheritIO().start().waitFor();
      if (at[1].equals("KILL")) {
        Thread.sleep(60_000); // never returns: the signal is on its way
      }
    } catch (IOException e) {
      throw new IllegalStateException("could not signal this process at kill point " + point, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Watches the job's task ends for {@link #FIRST_TASK} and {@link #HALF_TASKS} of {@code tasks}, when one is set. */
  public static void watchTasks(SparkContext sc, int tasks) {
    String[] at = setting();
    if (at == null || !(at[0].equals(FIRST_TASK) || at[0].equals(HALF_TASKS))) {
      return;
    }
    int when = at[0].equals(FIRST_TASK) ? 1 : Math.max(1, tasks / 2);
    AtomicInteger done = new AtomicInteger();
    java.util.Set<Integer> stages = java.util.concurrent.ConcurrentHashMap.newKeySet();
    sc.addSparkListener(new SparkListener() {
      @Override
      public void onJobStart(org.apache.spark.scheduler.SparkListenerJobStart start) {
        // the job's own tasks, not the local warm-up's
        if (start.properties() != null && "volpool".equals(start.properties().getProperty("spark.jobGroup.id"))) {
          scala.jdk.javaapi.CollectionConverters.asJava(start.stageIds()).forEach(id -> stages.add((Integer) id));
        }
      }

      @Override
      public void onTaskEnd(SparkListenerTaskEnd end) {
        if (stages.contains(end.stageId()) && end.taskInfo().successful() && done.incrementAndGet() == when) {
          reach(at[0]);
        }
      }
    });
  }
}
