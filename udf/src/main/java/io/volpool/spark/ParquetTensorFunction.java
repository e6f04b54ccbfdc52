package io.volpool.spark;

import io.volpool.backend.Backend;
import io.volpool.backend.Backends;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.util.Iterator;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The per-partition work of a Parquet job: rows in, one output row per input row out (same order),
 * with the tensor replaced by the pipeline's output in the binary layout and the other columns
 * passed through. Carries settings only; the backend comes from the executor JVM's {@link Backends}.
 */
public final class ParquetTensorFunction implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;
  private final RunSpec spec;
  private final TensorLayout layout;
  private final JobMetrics metrics;

  public ParquetTensorFunction(RunSpec spec, TensorLayout layout, JobMetrics metrics) {
    this.spec = spec;
    this.layout = layout;
    this.metrics = metrics;
  }

  @Override
  public Iterator<Row> call(Iterator<Row> rows) {
    Backend backend = Backends.get(spec.device(), spec.cpuThreads(), spec.gpuTasksPerDevice());
    TaskContext tc = TaskContext.get();
    int partition = tc == null ? 0 : tc.partitionId();
    String task = "partition " + partition;
    Iterator<RowVolume> volumes = new Iterator<>() {
      long n;

      @Override
      public boolean hasNext() {
        return rows.hasNext();
      }

      @Override
      public RowVolume next() {
        return new RowVolume(rows.next(), layout, n++, partition);
      }
    };
    BatchRunner<RowVolume, Row> runner = new BatchRunner<>(volumes, backend, spec, this::emit, task);
    if (tc != null) {
      tc.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) ctx -> runner.close());
    }
    return new Iterator<>() {
      boolean counted;

      @Override
      public boolean hasNext() {
        boolean more = runner.hasNext();
        if (!more && !counted) {
          counted = true;
          metrics.add(runner, backend.name());
          runner.close();
        }
        return more;
      }

      @Override
      public Row next() {
        return runner.next();
      }
    };
  }

  private Row emit(RowVolume v, VolumeShape outShape, ByteBuffer out) {
    int[] pass = layout.passthrough();
    Object[] values = new Object[pass.length + 3];
    for (int i = 0; i < pass.length; i++) {
      values[i] = v.row().get(pass[i]);
    }
    values[pass.length] = Shapes.seq(outShape);
    values[pass.length + 1] = "float32";
    byte[] bytes = new byte[out.remaining()];
    out.get(bytes);
    values[pass.length + 2] = bytes;
    return RowFactory.create(values);
  }
}
