package io.volpool.job;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.deploy.DeployMessages;
import org.apache.spark.deploy.master.WorkerInfo;
import org.apache.spark.resource.ResourceInformation;
import org.apache.spark.rpc.RpcAddress;
import org.apache.spark.rpc.RpcEndpointRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.reflect.ClassTag$;

/**
 * What a standalone master's workers can hold, asked from the master itself (the message its web UI
 * sends), so that a request no worker can ever satisfy is told from a cluster that is only busy: an
 * executor needs its cores, its memory and every resource amount on one worker at once.
 */
final class StandaloneWorkers {
  private static final Logger LOG = LoggerFactory.getLogger(StandaloneWorkers.class);

  private StandaloneWorkers() {}

  /** How long the driver waits for the master's answer before it takes the cluster's capacity as unknown. */
  static final int ASK_SECONDS = 5;

  /** One worker's totals as the master registered them. */
  record Worker(String host, String state, int cores, int memoryMiB, Map<String, Integer> resources) {}

  /** What one executor asks for. */
  record Ask(int cores, int memoryMiB, Map<String, Integer> resources) {}

  /**
   * The reason no alive worker can ever start an executor of {@code ask}, one clause per worker; empty
   * when one can (the cluster is busy, not too small) or when this cannot be known (not a standalone
   * master, no alive worker yet, the master did not answer).
   */
  static Optional<String> neverFits(SparkContext sc) {
    if (!sc.master().startsWith("spark://")) {
      return Optional.empty();
    }
    // at most a few seconds: an unreachable master would hold the RPC lookup for spark.rpc.lookupTimeout (120 s)
    // and with it the resource watch's own timeout
    Optional<List<Worker>> workers = within(ASK_SECONDS, () -> workers(sc.master()), sc.master());
    return workers.isEmpty() ? Optional.empty() : neverFits(ask(sc), workers.get());
  }

  /** The master's workers if {@code ask} answers within {@code seconds}; empty (unknown) when it fails or takes longer. */
  static Optional<List<Worker>> within(int seconds, java.util.concurrent.Callable<List<Worker>> ask, String master) {
    java.util.concurrent.FutureTask<List<Worker>> asked = new java.util.concurrent.FutureTask<>(ask);
    Thread t = new Thread(asked, "volpool-ask-master");
    t.setDaemon(true);
    t.start();
    try {
      return Optional.of(asked.get(seconds, java.util.concurrent.TimeUnit.SECONDS));
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      LOG.info("volpool: could not ask the master {} for its workers: {}", master, String.valueOf(e.getCause() != null
          ? e.getCause() : e));
      t.interrupt();
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  static Optional<String> neverFits(Ask ask, List<Worker> workers) {
    List<String> why = new ArrayList<>();
    for (Worker w : workers) {
      if (!"ALIVE".equals(w.state())) {
        continue;
      }
      List<String> lacks = new ArrayList<>();
      if (w.cores() < ask.cores()) {
        lacks.add(w.cores() + " core(s) of " + ask.cores());
      }
      if (w.memoryMiB() < ask.memoryMiB()) {
        lacks.add(w.memoryMiB() + " MiB of " + ask.memoryMiB() + " MiB");
      }
      for (var r : ask.resources().entrySet()) {
        int has = w.resources().getOrDefault(r.getKey(), 0);
        if (has < r.getValue()) {
          lacks.add(has + " " + r.getKey() + "(s) of " + r.getValue());
        }
      }
      if (lacks.isEmpty()) {
        return Optional.empty();
      }
      why.add(w.host() + " has " + String.join(", ", lacks));
    }
    return why.isEmpty() ? Optional.empty() : Optional.of(String.join("; ", why));
  }

  /** The executor request as the standalone master schedules it (cores 1 when unset, memory without overhead). */
  static Ask ask(SparkContext sc) {
    var c = sc.getConf();
    Map<String, Integer> res = new java.util.TreeMap<>();
    for (scala.Tuple2<String, String> kv : c.getAllWithPrefix("spark.executor.resource.")) {
      if (kv._1().endsWith(".amount")) {
        res.put(kv._1().substring(0, kv._1().length() - ".amount".length()), (int) Math.ceil(Double.parseDouble(kv._2())));
      }
    }
    return new Ask(c.getInt("spark.executor.cores", 1), sc.executorMemory(), res);
  }

  /** The alive master's registered workers; the first of an HA list that answers as ALIVE. */
  static List<Worker> workers(String master) {
    RuntimeException last = null;
    for (String hostPort : master.substring("spark://".length()).split(",")) {
      try {
        RpcEndpointRef ref = SparkEnv.get().rpcEnv().setupEndpointRef(RpcAddress.fromSparkURL("spark://" + hostPort), "Master");
        DeployMessages.MasterStateResponse state = ref.askSync(DeployMessages.RequestMasterState$.MODULE$,
            ClassTag$.MODULE$.apply(DeployMessages.MasterStateResponse.class));
        if (!"ALIVE".equals(String.valueOf(state.status()))) {
          continue;
        }
        List<Worker> out = new ArrayList<>();
        for (WorkerInfo w : state.workers()) {
          Map<String, Integer> res = new java.util.TreeMap<>();
          for (var kv : scala.jdk.javaapi.CollectionConverters.asJava(w.resourcesInfo()).entrySet()) {
            ResourceInformation info = kv.getValue();
            res.put(kv.getKey(), info.addresses().length);
          }
          out.add(new Worker(w.host(), String.valueOf(w.state()), w.cores(), w.memory(), res));
        }
        return out;
      } catch (RuntimeException e) {
        last = e;
      }
    }
    throw last != null ? last : new IllegalStateException("no master of " + master + " is ALIVE");
  }
}
