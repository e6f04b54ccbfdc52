package io.volpool.spark;

import io.volpool.conf.VolpoolOptions;
import io.volpool.backend.Backend;
import io.volpool.exec.ExecutorRuntime;
import io.volpool.exec.BatchRunner;
import io.volpool.exec.ScratchFiles;
import io.volpool.exec.SlabVolumes;
import io.volpool.exec.TaskRun;
import io.volpool.exec.TaskState;
import io.volpool.backend.Phase;
import io.volpool.io.npy.NpyVolumeInput;
import io.volpool.io.parquet.ParquetVolumeInput;
import io.volpool.io.parquet.PlaneRowsInput;
import io.volpool.io.VolumeInput;
import io.volpool.memory.MemoryBudget;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.PairFlatMapFunction;
import org.apache.spark.resource.ResourceInformation;
import scala.Tuple2;

/**
 * The one partition function of a volpool job, for Parquet and .npy input alike: opens the task's
 * input, picks the JVM's backend ({@link io.volpool.exec.ExecutorRuntime}) and the task's device (from the GPU Spark
 * assigned it, mapped through CUDA_VISIBLE_DEVICES), and hands finished batches to the output
 * writer ({@link VolpoolOutputFormat}) one at a time. When the task completes, its counts and
 * times go into the job's accumulators and its batches back to the budget.
 */
public final class PartitionRunner implements PairFlatMapFunction<Iterator<TaskPlan>, Void, BatchRunner.Finished> {
  private static final long serialVersionUID = 1L;

  private final RunSpec spec;
  /** Broadcast, so each executor deserializes the Hadoop configuration once, not once per task (7 ms each). */
  private final org.apache.spark.broadcast.Broadcast<SerializableHadoopConf> conf;
  private final JobMetrics metrics;

  public PartitionRunner(RunSpec spec, org.apache.spark.broadcast.Broadcast<SerializableHadoopConf> conf,
      JobMetrics metrics) {
    this.spec = spec;
    this.conf = conf;
    this.metrics = metrics;
  }

  /** Spill files in the executor's local directories ({@code spark.local.dir}), outside Spark the JVM's temporary directory. */
  static final ScratchFiles LOCAL_DIRS = what -> {
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    return env != null ? env.blockManager().diskBlockManager().createTempLocalBlock()._2() : ScratchFiles.TEMP.create(what);
  };

  /**
   * The task whose partition function runs on this thread, for the output committer, which Spark
   * makes apart from both the partition function and the writer and calls on the task's thread after
   * the writer (the writer gets the task's state with each batch it writes).
   */
  private static final ThreadLocal<TaskState> CURRENT = new ThreadLocal<>();

  static TaskState current() {
    return CURRENT.get();
  }

  /** The device index of this task on {@code backend}: the GPU Spark assigned it, else device 0. */
  public static int deviceOf(TaskContext tc, Backend backend) {
    String address = null;
    if (tc != null) {
      Map<String, ResourceInformation> res = tc.resourcesJMap();
      ResourceInformation gpu = res.get("gpu");
      address = gpu != null && gpu.addresses().length > 0 ? gpu.addresses()[0] : null;
    }
    return backend.deviceFor(address);
  }

  @Override
  public Iterator<Tuple2<Void, BatchRunner.Finished>> call(Iterator<TaskPlan> plans) {
    TaskContext tc = TaskContext.get();
    if (!plans.hasNext()) {
      return java.util.Collections.emptyIterator(); // an input of no volumes still makes one (empty) partition
    }
    TaskPlan plan = plans.next();
    if (plans.hasNext()) {
      throw new IllegalStateException("a volpool partition holds one task plan");
    }
    TaskState state = new TaskState();
    CURRENT.set(state);
    ExecutorRuntime runtime = ExecutorRuntime.of(spec.settings());
    MemoryBudget budget = runtime.budget();
    Backend backend = runtime.backend();
    int device = deviceOf(tc, backend);
    String task = "task " + plan.index() + (tc == null ? "" : " (attempt " + tc.attemptNumber() + ")");
    TaskRun runner;
    if (!plan.volumes().isEmpty()) {
      runner = new SlabVolumes<>(plan.volumes(), new PlaneRowsInput(spec.layout(), spec.rescale(), conf.value().get(), budget,
          state.times()), backend, device, spec.engine(), budget, state, task);
    } else if (!plan.ranges().isEmpty()) {
      runner = new SlabVolumes<>(plan.ranges(), new io.volpool.io.npy.NpyRangeInput(spec.rescale().fixed(),
          conf.value().get(), spec.npyMaxHeaderBytes(), state.times()), backend, device, spec.engine(), budget, state, task);
    } else {
      VolumeInput input = spec.inputFormat() == io.volpool.conf.FileFormat.NPY
          ? new NpyVolumeInput(plan.files(), spec.rescale().fixed(), conf.value().get(), spec.npyMaxHeaderBytes(), state.times())
          : new ParquetVolumeInput(plan.splits(), spec.layout(), spec.rescale(), conf.value().get(), state.times());
      runner = new BatchRunner(input, backend, device, spec.engine(), budget, state, task, LOCAL_DIRS);
    }
    String backendName = backend.name(device);
    long[] reported = new long[2]; // volumes and bytes read that the accumulators already hold
    // Spark's own input metrics (the stage page's input, the REST API, the event log): what volpool reads is
    // no Hadoop RDD, so they are counted here as the accumulators are, volumes (or rows) and stored bytes
    org.apache.spark.executor.InputMetrics input = tc == null ? null : tc.taskMetrics().inputMetrics();
    runner.onRead(() -> progress(runner, reported, input));
    if (tc != null) {
      tc.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) ctx -> {
        try {
          runner.close();
        } finally {
          CURRENT.remove();
          report(state, runner, backendName, budget, reported, input);
          // Spark's writer has set its output metrics by now (records: the batches it was handed; bytes: what went
          // through Hadoop's streams, none for local files): what volpool wrote instead, volumes and their bytes
          org.apache.spark.executor.OutputMetrics output = ctx.taskMetrics().outputMetrics();
          output.setRecordsWritten(state.volumeStarts());
          output.setBytesWritten(runner.bytesOut());
          if (ctx.isCompleted() && !ctx.isFailed()) {
            ExecutorCounters.VOLUMES_WRITTEN.addAndGet(state.volumeStarts());
            ExecutorCounters.BYTES_WRITTEN.addAndGet(runner.bytesOut());
            ExecutorCounters.TASKS.incrementAndGet();
          }
        }
      });
    }
    return new Iterator<>() {
      BatchRunner.Finished pending;
      boolean done;

      @Override
      public boolean hasNext() {
        if (pending == null && !done) {
          try {
            pending = runner.next();
          } catch (InternalError | RuntimeException e) {
            if (MappedFaults.isMappedFault(e)) {
              org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
              throw MappedFaults.explain(e, plan, conf.value().get(),
                  env == null ? null : env.blockManager().diskBlockManager().localDirs());
            }
            throw e;
          } catch (OutOfMemoryError e) {
            // fatal errors make Spark exit the JVM with code 52 and no word of why: say it, and fail the task instead
            throw new IllegalStateException("task ran out of JVM heap (" + e.getMessage() + ") with "
                + MemoryBudget.mib(budget.used()) + " of the " + MemoryBudget.mib(budget.limit()) + " memory budget in"
                + " use; give executors more memory or lower " + VolpoolOptions.MEMORY_BUDGET.key(), e);
          }
          state.sampleHeap();
          progress(runner, reported, input);
          if (pending == null) {
            done = true;
          }
        }
        return pending != null;
      }

      @Override
      public Tuple2<Void, BatchRunner.Finished> next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        BatchRunner.Finished f = pending;
        pending = null;
        return new Tuple2<>(null, f);
      }
    };
  }

  /**
   * Adds what was read since the last call to the accumulators as the task goes, so the values its
   * executor sends with each heartbeat move the driver's progress line during the task.
   */
  private void progress(TaskRun runner, long[] reported, org.apache.spark.executor.InputMetrics inputMetrics) {
    long v = runner.volumesIn();
    long b = runner.bytesIn();
    metrics.volumesRead().add(v - reported[0]);
    metrics.bytesIn().add(b - reported[1]);
    ExecutorCounters.VOLUMES_READ.addAndGet(v - reported[0]);
    ExecutorCounters.BYTES_READ.addAndGet(b - reported[1]);
    if (inputMetrics != null) {
      inputMetrics.incRecordsRead(v - reported[0]);
      inputMetrics.incBytesRead(b - reported[1]);
    }
    reported[0] = v;
    reported[1] = b;
  }

  private void report(TaskState state, TaskRun runner, String backendName, MemoryBudget budget, long[] reported,
      org.apache.spark.executor.InputMetrics input) {
    progress(runner, reported, input);
    metrics.volumesWritten().add(state.volumesWritten());
    metrics.volumeStarts().add(state.volumeStarts());
    metrics.filesWritten().add(state.filesWritten());
    metrics.bytesOut().add(runner.bytesOut());
    metrics.batches().add(runner.batches());
    metrics.slabbedVolumes().add(runner.slabbedVolumes());
    metrics.quarantined().add(state.quarantined().size());
    long[] ns = new long[Phase.values().length];
    long timed = 0;
    for (Phase p : Phase.values()) {
      ns[p.ordinal()] = state.times().get(p);
      timed += ns[p.ordinal()];
    }
    ns[Phase.OTHER.ordinal()] = Math.max(0, System.nanoTime() - state.started() - timed);
    for (Phase p : Phase.values()) {
      metrics.phaseSeconds().get(p).add(ns[p.ordinal()] / 1e9);
    }
    metrics.peakBudgetBytes().add(budget.peak());
    metrics.budgetBytes().add(budget.limit());
    metrics.peakHeapBytes().add(state.peakHeap());
    if (runner.volumesIn() > 0) {
      metrics.backends().add(backendName);
    }
    for (String t : state.inputDtypes()) {
      metrics.inputDtypes().add(t);
    }
  }
}
