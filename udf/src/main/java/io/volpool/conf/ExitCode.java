package io.volpool.conf;

/**
 * The process exit codes of a run, one per kind of failure, so that a scheduler can tell what a retry
 * could fix (1) from what it cannot (2-4). The status file records the same number.
 */
public enum ExitCode {
  OK(0),
  /** Anything else: a lost executor, a full disk, a bug; the only one worth retrying. */
  FAILED(1),
  /** Settings the job cannot run with (a key, a value, a request no worker can hold). */
  SETTINGS(2),
  /** Bad input: a record, a file, or no input file at all. */
  BAD_INPUT(3),
  /** The environment cannot run the job ({@code device=gpu} without a usable GPU). */
  ENVIRONMENT(4),
  /**
   * Done, with bad records quarantined ({@code spark.volpool.badRecords.path}): the output holds every other
   * record; the summary and the status file count those set aside. Not a failure, and nothing a retry changes.
   */
  QUARANTINED(5);

  private final int code;

  ExitCode(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }
}
