package io.volpool.exec;

import io.volpool.op.Pipeline;

/**
 * What the engine of a task needs to know of the run, free of Spark: built by the Spark layer from
 * the run's settings ({@code io.volpool.spark.RunSpec#engine()}).
 *
 * @param pipeline the operators, weights included
 * @param batchSize volumes per batch as the user set it; 0 lets the backend's plan choose
 * @param outputGap bytes left before each output volume for the writer (a Parquet value's length prefix)
 * @param outputRowBytes the most data bytes per output row of a volume written across rows
 * @param outputRows the output holds volumes across rows (Parquet with d0/d1): a volume run in slabs
 *     then streams out row by row as its slabs finish, whatever its size
 * @param quarantine a bad record is set aside in the task's {@link TaskState} and the task goes on
 *     ({@code spark.volpool.badRecords.path}); false: it fails the task
 */
public record EngineSpec(Pipeline pipeline, int batchSize, int outputGap, long outputRowBytes, boolean outputRows,
    boolean quarantine) {
  public EngineSpec(Pipeline pipeline, int batchSize, int outputGap, long outputRowBytes, boolean outputRows) {
    this(pipeline, batchSize, outputGap, outputRowBytes, outputRows, false);
  }
}
