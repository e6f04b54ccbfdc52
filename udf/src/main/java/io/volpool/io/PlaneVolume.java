package io.volpool.io;

import io.volpool.io.parquet.ParquetSplit;

import io.volpool.op.VolumeShape;
import java.io.Serializable;
import java.util.List;

/**
 * One volume stored across rows, planned on the driver: its id, its whole shape and its rows in
 * plane order, which together cover planes {@code [0, D)} once. The rows may lie in any files. A
 * volume spread over several tasks is planned as one entry per {@link Range} of its output planes,
 * each listing only the rows its input window reads.
 *
 * @param id the volume's id
 * @param shape the whole volume's shape
 * @param rows where each row is, sorted by {@code d0}: every row of the volume, or of the range's window
 * @param range the output planes this entry runs, or null for the whole volume
 */
public record PlaneVolume(String id, VolumeShape shape, List<Row> rows, Range range) implements SlabbedVolume {
  public PlaneVolume {
    rows = List.copyOf(rows);
  }

  /** The whole volume. */
  public PlaneVolume(String id, VolumeShape shape, List<Row> rows) {
    this(id, shape, rows, null);
  }

  /**
   * One row: planes {@code [d0, d1)} in row {@code row} of the row group that {@code split} covers.
   *
   * @param split the byte range of the row group's file holding the row (exactly one row group)
   * @param row the row's index within that row group
   */
  public record Row(ParquetSplit split, long row, int d0, int d1) implements Serializable {}

  /**
   * Output planes {@code [outFrom, outTo)} of the volume, as one task runs them: they read input planes
   * {@code [inFrom, inTo)} (the range's halo included); rows starting at {@code ownedFrom} or later are
   * counted as read by this range (a row in the halo of two ranges is counted once, by the first).
   */
  public record Range(int outFrom, int outTo, int inFrom, int inTo, int ownedFrom, Row first) implements Serializable {}

  /**
   * This volume's output planes {@code [outFrom, outTo)}, reading input planes {@code [inFrom, inTo)};
   * its output rows carry the pass-through columns of the volume's first row, as a whole run's do.
   */
  public PlaneVolume range(int outFrom, int outTo, int inFrom, int inTo, int ownedFrom) {
    List<Row> window = rows.stream().filter(r -> r.d1() > inFrom && r.d0() < inTo).toList();
    return new PlaneVolume(id, shape, window, new Range(outFrom, outTo, inFrom, inTo, ownedFrom, rows.get(0)));
  }

  /** The row whose pass-through columns the volume's output rows carry: its first (plane 0). */
  public Row firstRow() {
    return range == null ? rows.get(0) : range.first();
  }

  /** Whether row {@code r} is counted as read by this entry (always, for a whole volume). */
  public boolean owns(Row r) {
    return range == null || r.d0() >= range.ownedFrom();
  }

  @Override
  public int[] outputPlanes() {
    return range == null ? null : new int[] {range.outFrom(), range.outTo()};
  }

  /** Input bytes of the volume (as float32), or of the range's window. */
  @Override
  public long bytes() {
    if (range == null) {
      return shape.bytes();
    }
    return (long) shape.c() * (range.inTo() - range.inFrom()) * shape.h() * shape.w() * Float.BYTES;
  }

  /** The record name in errors and logs: {@code id=ID}, with the output planes of a range. */
  @Override
  public String record() {
    return "id=" + id + (range == null ? "" : " output planes [" + range.outFrom() + ", " + range.outTo() + ")");
  }
}
