package io.volpool.conf;

/** What a run does with an output that exists ({@link VolpoolOptions#MODE}), as Spark's save modes. */
public enum OutputMode {
  ERRORIFEXISTS,
  OVERWRITE;

  @Override
  public String toString() {
    return ConfKey.name(this);
  }
}
