package io.volpool.io;

/**
 * A record of the input cannot be processed: its message names the record (row id or file path)
 * and the rule it broke. Fails the job; never skipped silently.
 */
public class BadRecordException extends RuntimeException implements io.volpool.conf.VolpoolFailure {
  private static final long serialVersionUID = 1L;
  /** What the driver says after a bad record's line (also when it found the record only by its text). */
  public static final String ADVICE = "no output was written; fix or remove that record and rerun";

  @Override
  public io.volpool.conf.ExitCode exit() {
    return io.volpool.conf.ExitCode.BAD_INPUT;
  }

  @Override
  public String advice() {
    return ADVICE;
  }
  private final String record;

  public BadRecordException(String record, String rule) {
    super("bad record " + record + ": " + withoutRecord(record, rule));
    this.record = record;
  }

  public BadRecordException(String record, String rule, Throwable cause) {
    super("bad record " + record + ": " + withoutRecord(record, rule), cause);
    this.record = record;
  }

  /** The rule without a leading copy of the record's name (a format's own message often starts with the path). */
  static String withoutRecord(String record, String rule) {
    if (rule == null) {
      return null;
    }
    String path = record.startsWith("file:") ? record.substring(5) : record;
    for (String p : new String[] {record + ": ", path + ": ", "file:" + path + ": "}) {
      if (!p.equals(": ") && rule.startsWith(p)) {
        return rule.substring(p.length());
      }
    }
    return rule;
  }

  /** The record's id or path as the user knows it. */
  public String record() {
    return record;
  }
}
