package io.volpool.io;

import io.volpool.format.Dtype;
import io.volpool.format.ValueType;
import io.volpool.op.VolumeShape;
import java.util.List;

/**
 * The rules a row of the binary layout must meet, in one place for the Parquet reader and for
 * DataFrame rows: a shape of four positive dimensions, a dtype of {@link Dtype#ACCEPTED}, and data
 * of exactly shape x the dtype's size bytes. Each broken rule is a {@link BadRecordException} naming the record.
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

  /** The value type the row's {@code dtype} names. */
  public static ValueType dtype(String record, String dtype) {
    ValueType t = ValueType.parse(dtype);
    if (t == null) {
      throw new BadRecordException(record, "dtype must be one of " + Dtype.ACCEPTED + ", got "
          + (dtype == null ? "null" : "'" + dtype + "'"));
    }
    return t;
  }

  /** Checks that {@code length} bytes of data hold exactly {@code shape} as values of {@code type}. */
  public static void length(String record, VolumeShape s, ValueType type, long length) {
    long want;
    try {
      want = Math.multiplyExact(s.numel(), (long) type.itemSize());
    } catch (ArithmeticException e) {
      throw new BadRecordException(record, "shape " + s + " has more elements than fit in 64 bits");
    }
    if (length != want) {
      throw new BadRecordException(record, "data holds " + length + " bytes but shape " + s + " of " + type + " needs "
          + want + " (shape x " + type.itemSize() + " bytes)");
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
