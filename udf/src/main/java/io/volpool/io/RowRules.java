package io.volpool.io;

import io.volpool.op.VolumeShape;
import java.util.List;

/**
 * The rules a row of the binary layout must meet, in one place for the Parquet reader and for
 * DataFrame rows: a shape of four positive dimensions, dtype {@code float32} (or {@code <f4}), and
 * data of exactly shape x 4 bytes. Each broken rule is a {@link BadRecordException} naming the record.
 */
public final class RowRules {
  private RowRules() {}

  /** The volume shape of {@code dims} (null elements allowed, reported). */
  public static VolumeShape shape(String record, List<? extends Object> dims) {
    if (dims == null) {
      throw new BadRecordException(record, "shape is null; every row needs shape [C, D, H, W]");
    }
    if (dims.size() != 4) {
      throw new BadRecordException(record, "shape must have 4 dimensions [C, D, H, W], got " + dims);
    }
    int[] d = new int[4];
    for (int i = 0; i < 4; i++) {
      Object v = dims.get(i);
      if (!(v instanceof Number n) || n.longValue() <= 0 || n.longValue() > Integer.MAX_VALUE) {
        throw new BadRecordException(record, "shape must have 4 positive dimensions [C, D, H, W], got " + dims);
      }
      d[i] = n.intValue();
    }
    try {
      return VolumeShape.of(d);
    } catch (IllegalArgumentException e) {
      throw new BadRecordException(record, e.getMessage());
    }
  }

  public static void dtype(String record, String dtype) {
    if (!"float32".equals(dtype) && !"<f4".equals(dtype)) {
      throw new BadRecordException(record, "dtype must be 'float32' (or '<f4'), got "
          + (dtype == null ? "null" : "'" + dtype + "'"));
    }
  }

  /** Checks that {@code length} bytes of data hold exactly {@code shape} as float32. */
  public static void length(String record, VolumeShape s, long length) {
    long want;
    try {
      want = Math.multiplyExact(s.numel(), 4L);
    } catch (ArithmeticException e) {
      throw new BadRecordException(record, "shape " + s + " has more elements than fit in 64 bits");
    }
    if (length != want) {
      throw new BadRecordException(record, "data holds " + length + " bytes but shape " + s + " of float32 needs "
          + want + " (shape x 4 bytes)");
    }
  }

  /**
   * The planes {@code [d0, d1)} a row of a volume stored across rows holds: both set, and
   * {@code 0 <= d0 < d1 <= D} for the whole volume's {@code shape}.
   */
  public static int[] planes(String record, VolumeShape whole, Long d0, Long d1) {
    if (d0 == null || d1 == null) {
      throw new BadRecordException(record, "d0 and d1 must both be set on a row of a volume stored across rows, got d0="
          + d0 + ", d1=" + d1);
    }
    if (d0 < 0 || d1 <= d0 || d1 > whole.d()) {
      throw new BadRecordException(record, "planes [d0, d1) = [" + d0 + ", " + d1 + ") must satisfy 0 <= d0 < d1 <= D = "
          + whole.d() + " of shape " + whole);
    }
    return new int[] {(int) (long) d0, (int) (long) d1};
  }
}
