package io.volpool.conf;

/** How Parquet output holds a volume ({@link VolpoolOptions#OUTPUT_LAYOUT}). */
public enum OutputLayout {
  /** Across rows exactly when the input is. */
  AUTO,
  /** Across rows: d0/d1 columns, a large volume in several rows. */
  ROWS,
  /** One row per volume. */
  VOLUME;

  @Override
  public String toString() {
    return ConfKey.name(this);
  }
}
