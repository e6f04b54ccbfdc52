package io.volpool.job.config;

/** One {@code spark.volpool.*} setting: its key, default (null when required or unset) and a one-line description. */
public record ConfKey(String key, String defaultValue, String doc) {
  /** The README table row for this key. */
  public String markdownRow() {
    String d = defaultValue == null ? "(none)" : defaultValue.isEmpty() ? "(empty)" : "`" + defaultValue + "`";
    return "| `" + key + "` | " + d + " | " + doc + " |";
  }
}
