package io.volpool.spark;

import io.volpool.backend.Backend;
import io.volpool.exec.ExecutorRuntime;
import io.volpool.exec.BatchRunner;
import io.volpool.exec.EngineSpec;
import io.volpool.exec.TaskState;
import io.volpool.backend.PhaseTimes;
import io.volpool.memory.MemoryBudget;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The partition function of {@code Volpool.transform}: a DataFrame's rows through the same batch
 * engine, backend choice and device mapping as the job, each output row the input's pass-through
 * columns with the pipeline's {@code shape}, {@code dtype} and {@code data}.
 */
public final class RowTransform implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;
  private final RunSpec spec;
  private final RowInput.Layout layout;

  public RowTransform(RunSpec spec, RowInput.Layout layout) {
    this.spec = spec;
    this.layout = layout;
  }

  @Override
  public Iterator<Row> call(Iterator<Row> rows) {
    TaskContext tc = TaskContext.get();
    ExecutorRuntime runtime = ExecutorRuntime.of(spec.settings());
    MemoryBudget budget = runtime.budget();
    Backend backend = runtime.backend();
    int device = PartitionRunner.deviceOf(tc, backend);
    RowInput input = new RowInput(rows, layout, spec.rescale());
    BatchRunner runner = new BatchRunner(input, backend, device,
        new EngineSpec(spec.pipeline(), spec.batchSize(), 0, spec.outputRowBytes(), false), budget, new TaskState(),
        "transform partition " + (tc == null ? 0 : tc.partitionId()), PartitionRunner.LOCAL_DIRS);
    if (tc != null) {
      tc.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) ctx -> runner.close());
    }
    return new Iterator<>() {
      final ArrayDeque<Row> ready = new ArrayDeque<>();
      boolean done;

      @Override
      public boolean hasNext() {
        while (ready.isEmpty() && !done) {
          BatchRunner.Finished f = runner.next();
          if (f == null) {
            done = true;
            runner.close();
            break;
          }
          List<Object> shape = new ArrayList<>();
          for (int d : f.outShape().toArray()) {
            shape.add(d);
          }
          scala.collection.immutable.Seq<Object> seq = scala.jdk.javaapi.CollectionConverters.asScala(shape).toSeq();
          for (int i = 0; i < f.items().size(); i++) {
            Row in = input.takeInputRow();
            Object[] values = new Object[layout.passthrough().length + 3];
            for (int k = 0; k < layout.passthrough().length; k++) {
              values[k] = in.get(layout.passthrough()[k]);
            }
            byte[] data = new byte[(int) f.volumeBytes()];
            ByteBuffer out = f.output().duplicate();
            out.position((int) f.offsets()[i]);
            out.get(data);
            values[values.length - 3] = seq;
            values[values.length - 2] = f.dtype().numpyName();
            values[values.length - 1] = data;
            ready.add(RowFactory.create(values));
          }
        }
        return !ready.isEmpty();
      }

      @Override
      public Row next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return ready.poll();
      }
    };
  }
}
