package io.volpool.io;

/** An input file does not hold what its own metadata says (a truncated or corrupt file); names the file and the column. */
public class CorruptInputException extends IllegalStateException implements io.volpool.conf.VolpoolFailure {
  private static final long serialVersionUID = 1L;

  @Override
  public io.volpool.conf.ExitCode exit() {
    return io.volpool.conf.ExitCode.BAD_INPUT;
  }

  @Override
  public String advice() {
    return "no output was written; fix or remove that file and rerun";
  }

  public CorruptInputException(String message) {
    super(message);
  }
}
