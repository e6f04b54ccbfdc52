package io.volpool.io;

import io.volpool.io.parquet.ParquetSplit;

import io.volpool.op.VolumeShape;
import java.io.Serializable;
import java.util.List;

/**
 * One volume stored across rows, planned on the driver: its id, its whole shape and its rows in
 * plane order, which together cover planes {@code [0, D)} once. The rows may lie in any files.
 *
 * @param id the volume's id
 * @param shape the whole volume's shape
 * @param rows where each row is, sorted by {@code d0}
 */
public record PlaneVolume(String id, VolumeShape shape, List<Row> rows) implements Serializable {
  public PlaneVolume {
    rows = List.copyOf(rows);
  }

  /**
   * One row: planes {@code [d0, d1)} in row {@code row} of the row group that {@code split} covers.
   *
   * @param split the byte range of the row group's file holding the row (exactly one row group)
   * @param row the row's index within that row group
   */
  public record Row(ParquetSplit split, long row, int d0, int d1) implements Serializable {}

  /** Input bytes of the volume. */
  public long bytes() {
    return shape.bytes();
  }
}
