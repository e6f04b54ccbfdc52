package io.volpool.io.parquet;

import java.io.Serializable;

/**
 * A byte range of one Parquet file, planned on the driver as Spark plans file splits: the row
 * groups whose middle lies in {@code [start, start + length)} belong to it.
 *
 * @param path the file's full path
 * @param relative its folder below the input root ({@code ""} at the root), kept in the output
 * @param start first byte of the range
 * @param length bytes in the range
 */
public record ParquetSplit(String path, String relative, long start, long length, long rows) implements Serializable {
  /** A split whose row count is not known ({@code rows} 0). */
  public ParquetSplit(String path, String relative, long start, long length) {
    this(path, relative, start, length, 0);
  }
}
