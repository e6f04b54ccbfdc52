package io.volpool.job;

import io.volpool.conf.VolpoolOptions;
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
 * says what was requested and what the cluster offered. When executors are launched but end before
 * they register ({@link ExecutorExits}), it fails as soon as a few have, saying so and where their
 * errors are. Started and closed by {@link VolpoolJob}.
 */
final class ResourceWatch extends SparkListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ResourceWatch.class);

  private final SparkContext sc;
  private final long timeoutMillis;
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean fired = new AtomicBoolean();
  private final List<String> offered = new ArrayList<>();
  private final Thread thread;
  private final ExecutorExits exits;
  /** Why no worker of a standalone master can ever hold one executor, once the master said so; null until then. */
  private volatile String neverFits;
  /** Executors that ended before any registered: this many and the job fails without waiting for the timeout. */
  static final int EXITS_BEFORE_FAILING = 3;

  ResourceWatch(SparkContext sc, long timeoutSeconds) {
    this.sc = sc;
    this.timeoutMillis = timeoutSeconds * 1000;
    this.exits = ExecutorExits.listen();
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

  /** True while no executor ever registered but at least {@link #EXITS_BEFORE_FAILING} ended. */
  private boolean executorsDieAtStart() {
    synchronized (offered) {
      return offered.isEmpty() && exits.removals().size() >= EXITS_BEFORE_FAILING;
    }
  }

  private void watch() {
    long until = System.currentTimeMillis() + timeoutMillis;
    long nextAsk = System.currentTimeMillis() + 3000;
    while (!started.get() && System.currentTimeMillis() < until && !executorsDieAtStart() && neverFits == null) {
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        return;
      }
      boolean none;
      synchronized (offered) {
        none = offered.isEmpty();
      }
      if (none && System.currentTimeMillis() >= nextAsk) {
        // a request no worker can ever hold fails now and as a settings error: waiting or retrying cannot help
        neverFits = StandaloneWorkers.neverFits(sc).orElse(null);
        nextAsk = System.currentTimeMillis() + 5000;
      }
    }
    if (!started.get() && fired.compareAndSet(false, true)) {
      LOG.error("volpool: no task started{}; cancelling the job", neverFits != null ? ": no worker can hold one executor"
          : executorsDieAtStart() ? ": " + exits.removals().size() + " executors ended as they started"
          : " within " + timeoutMillis / 1000 + " s");
      // the job may not be submitted yet (executors can die before it is): cancel until this watch is closed
      while (true) {
        sc.cancelAllJobs();
        try {
          Thread.sleep(500);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  /** True when this watch cancelled the job. */
  boolean fired() {
    return fired.get();
  }

  /** The error to report when {@link #fired()}. */
  ClusterResourceException failure() {
    var c = sc.getConf();
    // every resource an executor asks for: a worker that lacks any one of them never starts one
    List<String> asks = new ArrayList<>();
    for (String k : List.of("spark.executor.cores", "spark.executor.memory", "spark.executor.memoryOverhead",
        "spark.executor.resource.gpu.amount", "spark.task.resource.gpu.amount", "spark.task.cpus", "spark.cores.max")) {
      if (c.contains(k)) {
        asks.add(k + "=" + c.get(k));
      }
    }
    for (scala.Tuple2<String, String> kv : c.getAllWithPrefix("spark.executor.resource.")) {
      String k = "spark.executor.resource." + kv._1();
      if (kv._1().endsWith(".amount") && !asks.contains(k + "=" + kv._2())) {
        asks.add(k + "=" + kv._2());
      }
    }
    String requested = asks.isEmpty() ? "Spark's defaults (1 core, 1g per executor)" : String.join(", ", asks);
    String seen;
    synchronized (offered) {
      seen = offered.isEmpty() ? "no executor registered at all" : String.join("; ", offered);
    }
    if (neverFits != null) {
      return new ClusterResourceException("no executor can start on " + sc.master() + ": each asks for " + requested
          + " at once and no worker has them: " + neverFits + " (a worker's --cores, --memory and GPUs, as the master"
          + " registered them). Lower the request to fit a worker (or run with " + VolpoolOptions.DEVICE.key()
          + "=cpu and no spark.executor.resource.gpu.*), or add larger workers; a rerun as it is fails the same way", true);
    }
    List<String> died = exits.removals();
    if (offered.isEmpty() && !died.isEmpty()) {
      // executors were launched and ended before registering: the cluster has the resources, the executor cannot start
      return new ClusterResourceException("no task could start on " + sc.master() + ": " + died.size() + " executor(s)"
          + " ended as they started, none registered (last: " + died.get(died.size() - 1) + "). Each executor's own"
          + " error is in its worker's work folder (the worker's --work-dir or SPARK_WORKER_DIR, default"
          + " SPARK_HOME/work): " + sc.applicationId() + "/<executor id>/stderr. Common causes: no Java for the workers"
          + " (set JAVA_HOME in their environment), a JVM option or module that Java lacks"
          + " (spark.executor.extraJavaOptions; Spark 4 executors need jdk.incubator.vector), too little memory");
    }
    return new ClusterResourceException("no task could start on " + sc.master() + " within " + timeoutMillis / 1000
        + " s: each executor asks for " + requested + " and the cluster offered: " + seen + ". A worker starts an"
        + " executor only when it has every one of these at once (its cores, its memory, the memory plus overhead,"
        + " its GPUs): compare them with the workers' --cores, --memory and GPUs in the master's UI. Workers without"
        + " GPUs cannot run GPU executors: check the workers' GPU discovery (spark.worker.resource.gpu.discoveryScript, e.g."
        + " scripts/get-gpus-resources.sh), lower the resource amounts, or drop spark.executor.resource.gpu.* and run"
        + " with " + VolpoolOptions.DEVICE.key() + "=cpu; " + VolpoolOptions.RESOURCE_TIMEOUT.key() + " sets how long to wait");
  }

  @Override
  public void close() {
    thread.interrupt();
    sc.removeSparkListener(this);
    exits.close();
  }

  /** The cluster never gave the job an executor it could run on. */
  static final class ClusterResourceException extends IllegalStateException implements io.volpool.conf.VolpoolFailure {
    private static final long serialVersionUID = 1L;
    private final boolean neverFits;

    ClusterResourceException(String message) {
      this(message, false);
    }

    ClusterResourceException(String message, boolean neverFits) {
      super(message);
      this.neverFits = neverFits;
    }

    /** No worker can ever hold the request: a settings error (exit 2), not one a retry can fix; else exit 1. */
    @Override
    public io.volpool.conf.ExitCode exit() {
      return neverFits ? io.volpool.conf.ExitCode.SETTINGS : io.volpool.conf.ExitCode.FAILED;
    }

    @Override
    public String advice() {
      return neverFits ? "nothing was written; the cluster cannot run this request: see docs/cluster.md" : null;
    }
  }
}
