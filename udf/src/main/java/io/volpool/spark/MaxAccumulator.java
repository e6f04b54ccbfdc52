package io.volpool.spark;

import org.apache.spark.util.AccumulatorV2;

/** The largest value seen by any task (peak memory of an executor). */
public final class MaxAccumulator extends AccumulatorV2<Long, Long> {
  private static final long serialVersionUID = 1L;
  private long max;

  @Override
  public boolean isZero() {
    return max == 0;
  }

  @Override
  public AccumulatorV2<Long, Long> copy() {
    MaxAccumulator c = new MaxAccumulator();
    c.max = max;
    return c;
  }

  @Override
  public void reset() {
    max = 0;
  }

  @Override
  public void add(Long v) {
    max = Math.max(max, v);
  }

  @Override
  public void merge(AccumulatorV2<Long, Long> other) {
    add(other.value());
  }

  @Override
  public Long value() {
    return max;
  }
}
