package io.volpool.testing;

import static org.assertj.core.api.Assertions.fail;

/**
 * The golden tolerance of {@code ../shared/golden/README.md}: relative L2 error at most 1e-5 and
 * every element within {@code 1e-4 + 1e-4 * |ref|}; NaN never passes where the reference is a
 * number. Where the reference itself is not finite (maxpool3d's NaN and infinity cases), the output
 * must be the same: NaN where it is NaN, the same infinity. Failures name the first mismatching
 * index with both values.
 */
public final class Tolerance {
  public static final double REL_L2 = 1e-5;
  public static final double ATOL = 1e-4;
  public static final double RTOL = 1e-4;

  private Tolerance() {}

  public static void assertClose(float[] out, float[] ref, String what) {
    if (out.length != ref.length) {
      fail("%s: %d values, expected %d", what, out.length, ref.length);
    }
    double num = 0;
    double den = 0;
    int bad = -1;
    int badCount = 0;
    for (int i = 0; i < ref.length; i++) {
      double o = out[i];
      double r = ref[i];
      if (!Double.isFinite(r)) {
        if (Double.isNaN(r) ? !Double.isNaN(o) : o != r) {
          if (bad < 0) {
            bad = i;
          }
          badCount++;
        }
        continue;
      }
      if (Double.isNaN(o) || Math.abs(o - r) > ATOL + RTOL * Math.abs(r)) {
        if (bad < 0) {
          bad = i;
        }
        badCount++;
      }
      if (!Double.isNaN(o)) {
        num += (o - r) * (o - r);
      }
      den += r * r;
    }
    if (bad >= 0) {
      fail("%s: %d of %d elements outside %.0e + %.0e*|ref|; first at flat index %d: got %s, expected %s", what,
          badCount, ref.length, ATOL, RTOL, bad, out[bad], ref[bad]);
    }
    double rel = den == 0 ? Math.sqrt(num) : Math.sqrt(num / den);
    if (rel > REL_L2) {
      fail("%s: relative L2 error %.3e exceeds %.0e", what, rel, REL_L2);
    }
  }
}
