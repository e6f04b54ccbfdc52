package io.volpool.io;

/** An input file does not hold what its own metadata says (a truncated or corrupt file); names the file and the column. */
public class CorruptInputException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  public CorruptInputException(String message) {
    super(message);
  }
}
