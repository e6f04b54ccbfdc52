package io.volpool.conf;

/**
 * What a run does with an output that exists, and with the work of an earlier run on it
 * ({@link VolpoolOptions#MODE}): Spark's save modes, and volpool's resume.
 */
public enum OutputMode {
  /** Fail when the output exists. */
  ERRORIFEXISTS,
  /** Replace the output. */
  OVERWRITE,
  /**
   * Keep the committed tasks of an earlier run of the same settings and input that did not finish, and
   * run only the rest; with no such run, a run as {@link #ERRORIFEXISTS}; an output already complete
   * with the same settings and input is left as it is.
   */
  RESUME,
  /** Process only the input files not yet in the output (its manifest says which) and add their results. */
  APPEND;

  @Override
  public String toString() {
    return ConfKey.name(this);
  }
}
