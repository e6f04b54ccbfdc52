package io.volpool.format;

import java.io.Serializable;

/**
 * A linear rescale of stored values, {@code value * slope + intercept} in float32 (two roundings, as
 * PyTorch's {@code x.to(torch.float32) * slope + intercept}): DICOM's RescaleSlope and
 * RescaleIntercept, NIfTI's scl_slope and scl_inter. Immutable value.
 *
 * @param slope the factor
 * @param intercept the offset added after it
 */
public record Rescale(float slope, float intercept) implements Serializable {
  /** No rescale: values pass unchanged (a -0.0 stays -0.0). */
  public static final Rescale IDENTITY = new Rescale(1f, 0f);

  public Rescale {
    if (!Float.isFinite(slope) || !Float.isFinite(intercept)) {
      throw new IllegalArgumentException("a rescale needs a finite slope and intercept, got slope " + slope
          + ", intercept " + intercept);
    }
  }

  /** Whether this rescale leaves every value as it is. */
  public boolean isIdentity() {
    return Float.floatToRawIntBits(slope) == Float.floatToRawIntBits(1f)
        && Float.floatToRawIntBits(intercept) == Float.floatToRawIntBits(0f);
  }
}
