package io.volpool.job.commit;

/** The committed output is not what was read. */
public final class OutputMismatchException extends CommitFailure {
  private static final long serialVersionUID = 1L;

  public OutputMismatchException(String message) {
    super(message);
  }

  @Override
  public String advice() {
    return "nothing was published; see docs/failures.md (output check failed)";
  }
}
