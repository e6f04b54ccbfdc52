package io.volpool.spark;

import io.volpool.io.npy.NpyFileRef;
import io.volpool.io.npy.NpyRange;
import io.volpool.io.parquet.ParquetSplit;
import io.volpool.io.PlaneVolume;
import java.io.Serializable;
import java.util.List;

/**
 * The input of one Spark task, planned on the driver: Parquet splits or .npy files (one kind per
 * job), packed so that tasks carry similar byte counts.
 *
 * @param index the task's partition index
 * @param splits Parquet splits (empty for .npy input)
 * @param files .npy files (empty for Parquet input)
 * @param volumes volumes stored across rows (empty unless the input has {@code d0}/{@code d1} columns)
 * @param ranges ranges of the output planes of .npy volumes larger than a task (then nothing else)
 * @param bytes input bytes planned for the task
 */
public record TaskPlan(int index, List<ParquetSplit> splits, List<NpyFileRef> files, List<PlaneVolume> volumes,
    List<NpyRange> ranges, long bytes) implements Serializable {
  /** A task of splits, files or volumes across rows, with no .npy ranges. */
  public TaskPlan(int index, List<ParquetSplit> splits, List<NpyFileRef> files, List<PlaneVolume> volumes, long bytes) {
    this(index, splits, files, volumes, List.of(), bytes);
  }
}
