package io.volpool.job.commit;

import io.volpool.conf.VolpoolOptions;

/** Another run committed to, or is committing to, the same output. */
public final class ConcurrentCommitException extends CommitFailure {
  private static final long serialVersionUID = 1L;

  public ConcurrentCommitException(String message) {
    super(message);
  }

  @Override
  public String advice() {
    return "the output is the other run's; rerun when it has finished (with " + VolpoolOptions.MODE.key()
        + "=overwrite to replace it)";
  }
}
