package io.volpool.conf;

/** A {@code spark.volpool.*} setting is missing or invalid; the message names the key, the rule and the value. */
public class SettingsException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public SettingsException(String message) {
    super(message);
  }

  public SettingsException(String message, Throwable cause) {
    super(message, cause);
  }
}
