package io.volpool.conf;

/**
 * A failure volpool knows how to report, implemented by its user-facing exceptions: the one line a
 * user reads, the exit code the run ends with, and what to do next. The driver's report takes the
 * first one in a failure's cause chain; it parses no message for it, except where Spark kept only a
 * task failure's text.
 */
public interface VolpoolFailure {
  /** The exception's message, as {@link Throwable#getMessage()}. */
  String getMessage();

  /** How the run ends. */
  ExitCode exit();

  /** What to do next, printed after the failure's line; null for nothing more. */
  String advice();

  /** The line printed after {@code volpool: FAILED: }. */
  default String line() {
    return getMessage();
  }
}
