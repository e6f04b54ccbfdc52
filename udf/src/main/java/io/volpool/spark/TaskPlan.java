package io.volpool.spark;

import io.volpool.io.npy.NpyFileRef;
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
 * @param bytes input bytes planned for the task
 */
public record TaskPlan(int index, List<ParquetSplit> splits, List<NpyFileRef> files, List<PlaneVolume> volumes, long bytes)
    implements Serializable {}
