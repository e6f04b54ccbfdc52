package io.volpool.spark;

import java.util.Arrays;
import org.apache.spark.util.AccumulatorV2;

/** Element-wise sums of fixed-length long arrays (nanoseconds per phase over all tasks). */
public final class LongArrayAccumulator extends AccumulatorV2<long[], long[]> {
  private static final long serialVersionUID = 1L;
  private long[] sum;

  public LongArrayAccumulator(int length) {
    this.sum = new long[length];
  }

  @Override
  public boolean isZero() {
    return Arrays.stream(sum).allMatch(v -> v == 0);
  }

  @Override
  public AccumulatorV2<long[], long[]> copy() {
    LongArrayAccumulator c = new LongArrayAccumulator(sum.length);
    c.sum = sum.clone();
    return c;
  }

  @Override
  public void reset() {
    Arrays.fill(sum, 0);
  }

  @Override
  public void add(long[] v) {
    for (int i = 0; i < sum.length; i++) {
      sum[i] += v[i];
    }
  }

  @Override
  public void merge(AccumulatorV2<long[], long[]> other) {
    add(other.value());
  }

  @Override
  public long[] value() {
    return sum.clone();
  }
}
