package io.volpool.job.io;

/**
 * The input path holds no input file at all (an empty folder, or only hidden or non-input files):
 * most likely the wrong path or format, so the job fails (exit 3) rather than succeed with nothing.
 * Valid files that hold zero volumes are not this: they make an empty output.
 */
public final class NoInputException extends RuntimeException implements io.volpool.conf.VolpoolFailure {
  private static final long serialVersionUID = 1L;

  @Override
  public io.volpool.conf.ExitCode exit() {
    return io.volpool.conf.ExitCode.BAD_INPUT;
  }

  @Override
  public String advice() {
    return "nothing was written; point " + io.volpool.conf.VolpoolOptions.INPUT.key() + " at a folder of Parquet files,"
        + " or of .npy files with " + io.volpool.conf.VolpoolOptions.INPUT_FORMAT.key() + "=npy";
  }

  public NoInputException(String input, String format, java.util.List<String> skipped) {
    super("no input files in " + input + ": it holds no " + format + " file" + (skipped.isEmpty()
        ? " (it is empty)" : " (" + skipped.size() + " file(s) skipped: " + String.join(", ",
            skipped.subList(0, Math.min(10, skipped.size()))) + (skipped.size() > 10 ? ", ..." : "") + ")"));
  }
}
