package io.volpool.io;

import io.volpool.format.Rescale;
import java.io.Serializable;

/**
 * Where a run's rescale ({@code value * slope + intercept}, DICOM's RescaleSlope and RescaleIntercept,
 * NIfTI's scl_slope and scl_inter) comes from: fixed values from the settings, or per row from the
 * columns the settings name (a CT series differs per scan). Decided once on the driver; serializable.
 *
 * @param fixed the rescale of every volume, for whichever of slope and intercept has no column
 * @param slopeColumn the column holding each row's slope, or null
 * @param interceptColumn the column holding each row's intercept, or null
 */
public record InputRescale(Rescale fixed, String slopeColumn, String interceptColumn) implements Serializable {
  /** No rescale. */
  public static final InputRescale NONE = new InputRescale(Rescale.IDENTITY, null, null);

  /** Whether any value comes from a column. */
  public boolean perRow() {
    return slopeColumn != null || interceptColumn != null;
  }

  /** The row's values of the named columns. */
  @FunctionalInterface
  public interface Columns {
    /** The value of {@code column} in this row as a number, null when null; throws a bad record for a non-number. */
    Double number(String column);
  }

  /** The rescale of record {@code record}, whose named columns {@code row} reads. */
  public Rescale of(String record, Columns row) {
    if (!perRow()) {
      return fixed;
    }
    float slope = slopeColumn == null ? fixed.slope() : value(record, row, slopeColumn, "slope");
    float intercept = interceptColumn == null ? fixed.intercept() : value(record, row, interceptColumn, "intercept");
    return new Rescale(slope, intercept);
  }

  private static float value(String record, Columns row, String column, String what) {
    Double v = row.number(column);
    if (v == null) {
      throw new BadRecordException(record, "rescale " + what + " column '" + column + "' is null; every row needs its "
          + what + " (or set the fixed value instead of the column)");
    }
    float f = (float) (double) v;
    if (!Float.isFinite(f)) {
      throw new BadRecordException(record, "rescale " + what + " column '" + column + "' must be a finite float32, got "
          + v);
    }
    return f;
  }
}
