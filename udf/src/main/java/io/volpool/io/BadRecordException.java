package io.volpool.io;

/**
 * A record of the input cannot be processed: its message names the record (row id or file path)
 * and the rule it broke. Fails the job; never skipped silently.
 */
public class BadRecordException extends RuntimeException implements io.volpool.conf.VolpoolFailure {
  private static final long serialVersionUID = 1L;
  /** What the driver says after a bad record's line (also when it found the record only by its text). */
  public static final String ADVICE = "nothing was published; fix or remove that record and rerun, or set "
      + io.volpool.conf.VolpoolOptions.BAD_RECORDS_PATH.key() + "=DIR to set bad records aside there and write the rest";

  @Override
  public io.volpool.conf.ExitCode exit() {
    return io.volpool.conf.ExitCode.BAD_INPUT;
  }

  @Override
  public String advice() {
    return more.isEmpty() ? ADVICE : ADVICE.replace("that record", "those records");
  }
  private final String record;

  /** The rule the record broke, without the record's name. */
  private final String rule;

  public BadRecordException(String record, String rule) {
    super("bad record " + record + ": " + withoutRecord(record, rule));
    this.record = record;
    this.rule = withoutRecord(record, rule);
  }

  public BadRecordException(String record, String rule, Throwable cause) {
    super("bad record " + record + ": " + withoutRecord(record, rule), cause);
    this.record = record;
    this.rule = withoutRecord(record, rule);
  }

  /** The rule the record broke, as its message says it after the record's name. */
  public String rule() {
    return rule;
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

  /** Bad records one task names at most before it stops reading: the first, then up to this many more. */
  public static final int NAMED = 20;

  /**
   * {@code first}, whose message then lists the other bad records the task met after it, one per line
   * ({@code bad record ...: rule}), and a last line saying where the task stopped looking.
   */
  public static BadRecordException with(BadRecordException first, java.util.List<String> more, String stopped) {
    if (more.isEmpty() && stopped == null) {
      return first;
    }
    StringBuilder m = new StringBuilder(first.getMessage());
    for (String r : more) {
      m.append('\n').append(r);
    }
    if (stopped != null) {
      m.append("\n(").append(stopped).append(')');
    }
    return new BadRecordException(first, m.toString(), more, stopped);
  }

  private BadRecordException(BadRecordException first, String message, java.util.List<String> more, String stopped) {
    super(message, first);
    this.record = first.record;
    this.rule = first.rule;
    this.first = first.getMessage();
    this.more = java.util.List.copyOf(more);
    this.stopped = stopped;
  }

  /** The first bad record's message, when this one names several; else null. */
  private String first;
  /** The other bad records' messages, in the order the task met them. */
  private java.util.List<String> more = java.util.List.of();
  /** Where the task stopped looking for more; null when it looked at every record. */
  private String stopped;

  /** The first record's line, then one line per other bad record and where the task stopped looking. */
  @Override
  public String line() {
    if (first == null) {
      return getMessage();
    }
    StringBuilder b = new StringBuilder(first);
    for (String r : more) {
      b.append("\nvolpool: also ").append(r);
    }
    if (stopped != null) {
      b.append("\nvolpool: ").append(stopped);
    }
    return b.toString();
  }
}
