package io.volpool.testing;

import io.volpool.ops.fused.FusedOp;
import io.volpool.ops.fused.FusedWeights;
import java.util.SplittableRandom;

/** Fresh random inputs and models for tests that compare implementations (never zeros). */
public final class RandomData {
  private RandomData() {}

  public static float[] uniform(SplittableRandom r, long n, double lo, double hi) {
    float[] a = new float[Math.toIntExact(n)];
    for (int i = 0; i < a.length; i++) {
      a[i] = (float) (lo + (hi - lo) * r.nextDouble());
    }
    return a;
  }

  public static FusedOp fused(SplittableRandom r, int cin, int cout, int k, int s, int p, int op, int pool) {
    FusedWeights w = new FusedWeights(cin, cout, k, uniform(r, (long) cin * cout * k * k * k, -1, 1),
        uniform(r, cout, -1, 1), (float) (0.5 + r.nextDouble()), uniform(r, cout, -1, 1), (float) (r.nextDouble() * 2 - 1));
    return new FusedOp(s, p, op, pool, w);
  }
}
