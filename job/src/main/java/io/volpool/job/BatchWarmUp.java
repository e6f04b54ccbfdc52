package io.volpool.job;

import io.volpool.backend.Backend;
import io.volpool.exec.ExecutorRuntime;
import io.volpool.io.parquet.ParquetVolumeInput;
import io.volpool.io.RowRules;
import io.volpool.io.parquet.TensorLayout;
import io.volpool.job.io.SmallColumns;
import io.volpool.memory.MemoryBudget;
import io.volpool.format.ValueType;
import io.volpool.op.VolumeShape;
import io.volpool.spark.RunSpec;
import io.volpool.spark.TaskPlan;
import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.example.data.Group;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * In local mode, the first wave's batches made while the job is submitted: once the driver has
 * planned, a thread of its own asks the JVM's backend to make one batch per first task, as the
 * task's own plan would choose it ({@link Backend#makeBatchesAhead}), and gives them back to the
 * pools, where the tasks find them. On the H200 the first wave's sixteen tasks otherwise allocate
 * their device buffers and pinned staging all at once (0.2 s of contended CUDA allocations, in the
 * wall-clock profile of the 1,024-volume job). The shape is the layout's fixed one, or the first
 * row's {@code shape} of the first task's file. Started and forgotten: a failure is logged at debug
 * level, and the tasks allocate their batches themselves.
 */
final class BatchWarmUp {
  private static final Logger LOG = LoggerFactory.getLogger(BatchWarmUp.class);

  private BatchWarmUp() {}

  /** Starts making {@code batches} batches for tasks like {@code first}; returns the thread (tests join it). */
  static Thread start(RunSpec spec, TensorLayout layout, TaskPlan first, int batches, Configuration conf) {
    Thread t = new Thread(() -> {
      try {
        Group row = layout.isBinary() ? firstRow(first, conf) : null;
        if (layout.isBinary() && row == null) {
          return;
        }
        VolumeShape shape = row != null ? RowRules.shape("row 0", ParquetVolumeInput.RowValues.longList(row,
            TensorLayout.SHAPE)) : layout.fixedShape();
        ValueType stored = row != null ? RowRules.dtype("row 0", ParquetVolumeInput.RowValues.string(row,
            TensorLayout.DTYPE)) : ValueType.FLOAT32;
        ExecutorRuntime runtime = ExecutorRuntime.of(spec.settings());
        MemoryBudget budget = runtime.budget();
        Backend b = runtime.backend();
        LOG.info("volpool warm-up: {}", b.makeBatchesAhead(spec.pipeline(), shape, stored, spec.batchSize(),
            ParquetVolumeInput.volumesAtMost(first.splits()), b.deviceFor(null), spec.engine().outputGap(), budget,
            batches));
      } catch (IOException | RuntimeException | LinkageError e) {
        LOG.debug("no batches made ahead (the tasks allocate their own): {}", e.toString());
      }
    }, "volpool-batch-warm-up");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** The shape and dtype of the first row of the first task's first file, or null when it has no rows. */
  private static Group firstRow(TaskPlan first, Configuration conf) throws IOException {
    if (first.splits().isEmpty()) {
      return null;
    }
    Path file = new Path(first.splits().get(0).path());
    return SmallColumns.firstRow(file, List.of(TensorLayout.SHAPE, TensorLayout.DTYPE), conf);
  }
}
