package io.volpool.conf;

/** How volumes are stored in the input or the output. */
public enum FileFormat {
  PARQUET,
  NPY;

  @Override
  public String toString() {
    return ConfKey.name(this);
  }
}
