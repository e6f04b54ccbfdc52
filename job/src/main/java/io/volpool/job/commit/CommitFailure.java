package io.volpool.job.commit;

import io.volpool.conf.ExitCode;
import io.volpool.conf.VolpoolFailure;

/**
 * Why a run's output was not published: another run committed to the same output, or what the tasks
 * committed is not what was read. Both leave the output as it was (the staged files are removed); both
 * end the run with exit 1, the code a scheduler retries (the other run has finished, the filesystem is
 * shared again), and say what to do in their advice.
 */
public abstract sealed class CommitFailure extends IllegalStateException implements VolpoolFailure
    permits ConcurrentCommitException, OutputMismatchException {
  private static final long serialVersionUID = 1L;

  CommitFailure(String message) {
    super(message);
  }

  @Override
  public ExitCode exit() {
    return ExitCode.FAILED;
  }
}
