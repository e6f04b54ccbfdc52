package io.volpool.conf;

/** A {@code spark.volpool.*} setting is missing or invalid; the message names the key, the rule and the value. */
public class SettingsException extends IllegalArgumentException implements VolpoolFailure {
  private static final long serialVersionUID = 1L;

  @Override
  public ExitCode exit() {
    return ExitCode.SETTINGS;
  }

  @Override
  public String line() {
    return "invalid settings: " + getMessage();
  }

  @Override
  public String advice() {
    return "see docs/settings.md, or run with --help";
  }

  public SettingsException(String message) {
    super(message);
  }

  public SettingsException(String message, Throwable cause) {
    super(message, cause);
  }
}
