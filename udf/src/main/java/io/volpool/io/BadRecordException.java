package io.volpool.io;

/**
 * A record of the input cannot be processed: its message names the record (row id or file path)
 * and the rule it broke. Fails the job; never skipped silently.
 */
public class BadRecordException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String record;

  public BadRecordException(String record, String rule) {
    super("bad record " + record + ": " + rule);
    this.record = record;
  }

  public BadRecordException(String record, String rule, Throwable cause) {
    super("bad record " + record + ": " + rule, cause);
    this.record = record;
  }

  /** The record's id or path as the user knows it. */
  public String record() {
    return record;
  }
}
