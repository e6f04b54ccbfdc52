package io.volpool.job.commit;

import io.volpool.conf.VolpoolOptions;

/** Another run committed to, or is committing to, the same output. */
public final class ConcurrentCommitException extends CommitFailure {
  private static final long serialVersionUID = 1L;

  /** What to do instead of the default advice; null for the default. */
  private final String advice;

  public ConcurrentCommitException(String message) {
    this(message, null);
  }

  public ConcurrentCommitException(String message, String advice) {
    super(message);
    this.advice = advice;
  }

  @Override
  public String advice() {
    return advice != null ? advice : "the output is the other run's; rerun when it has finished (with " + VolpoolOptions.MODE.key()
        + "=overwrite to replace it)";
  }
}
