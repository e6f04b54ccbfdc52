package io.volpool.job;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkContext;
import org.apache.spark.resource.ResourceInformation;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fails a job on a cluster that never starts a task: when no executor with the requested resources
 * registers (a GPU request on workers without GPUs), Spark waits forever, logging "Initial job has
 * not accepted any resources". After {@code timeoutSeconds} without a task this cancels the job and
 * says what was requested and what the cluster offered. Started and closed by {@link VolpoolJob}.
 */
final class ResourceWatch extends SparkListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ResourceWatch.class);

  private final SparkContext sc;
  private final long timeoutMillis;
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean fired = new AtomicBoolean();
  private final List<String> offered = new ArrayList<>();
  private final Thread thread;

  ResourceWatch(SparkContext sc, long timeoutSeconds) {
    this.sc = sc;
    this.timeoutMillis = timeoutSeconds * 1000;
    sc.addSparkListener(this);
    thread = new Thread(this::watch, "volpool-resource-watch");
    thread.setDaemon(true);
    thread.start();
  }

  @Override
  public void onTaskStart(SparkListenerTaskStart e) {
    started.set(true);
  }

  @Override
  public void onExecutorAdded(SparkListenerExecutorAdded e) {
    Map<String, ResourceInformation> res = scala.jdk.javaapi.CollectionConverters.asJava(e.executorInfo().resourcesInfo());
    synchronized (offered) {
      offered.add("executor " + e.executorId() + " on " + e.executorInfo().executorHost() + " with "
          + e.executorInfo().totalCores() + " core(s)" + (res.isEmpty() ? " and no resources" : " and " + res.keySet()));
    }
  }

  private void watch() {
    long until = System.currentTimeMillis() + timeoutMillis;
    while (!started.get() && System.currentTimeMillis() < until) {
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        return;
      }
    }
    if (!started.get() && fired.compareAndSet(false, true)) {
      LOG.error("volpool: no task started within {} s; cancelling the job", timeoutMillis / 1000);
      sc.cancelAllJobs();
    }
  }

  /** True when this watch cancelled the job. */
  boolean fired() {
    return fired.get();
  }

  /** The error to report when {@link #fired()}. */
  ClusterResourceException failure() {
    var c = sc.getConf();
    String requested = "spark.executor.resource.gpu.amount=" + c.get("spark.executor.resource.gpu.amount", "(unset)")
        + ", spark.task.resource.gpu.amount=" + c.get("spark.task.resource.gpu.amount", "(unset)")
        + ", spark.executor.cores=" + c.get("spark.executor.cores", "(unset)");
    String seen;
    synchronized (offered) {
      seen = offered.isEmpty() ? "no executor registered at all" : String.join("; ", offered);
    }
    return new ClusterResourceException("no task could start on " + sc.master() + " within " + timeoutMillis / 1000
        + " s: the job asks for " + requested + " and the cluster offered: " + seen + ". Workers without GPUs cannot"
        + " run GPU executors: check the workers' GPU discovery (spark.worker.resource.gpu.discoveryScript, e.g."
        + " scripts/get-gpus-resources.sh), lower the resource amounts, or drop spark.executor.resource.gpu.* and run"
        + " with spark.volpool.device=cpu; spark.volpool.cluster.resourceTimeout sets how long to wait");
  }

  @Override
  public void close() {
    thread.interrupt();
    sc.removeSparkListener(this);
  }

  /** The cluster never gave the job an executor it could run on. */
  static final class ClusterResourceException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    ClusterResourceException(String message) {
      super(message);
    }
  }
}
