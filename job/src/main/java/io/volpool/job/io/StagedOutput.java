package io.volpool.job.io;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The job writes into a hidden staging directory beside the output ({@code .NAME.volpool-staging-UUID})
 * and renames it to the output only after every task succeeded, so a failed job never leaves
 * something that looks like a complete output. With mode {@code overwrite} the old output is
 * deleted just before the rename. Owns the staging directory until {@link #commit} or {@link #abort}.
 */
public final class StagedOutput {
  private final FileSystem fs;
  private final Path output;
  private final Path staging;
  private final boolean overwrite;

  private StagedOutput(FileSystem fs, Path output, Path staging, boolean overwrite) {
    this.fs = fs;
    this.output = output;
    this.staging = staging;
    this.overwrite = overwrite;
  }

  /**
   * Checks the output path against the mode and picks a staging directory.
   *
   * @throws io.volpool.job.config.SettingsException when the output exists and {@code overwrite} is false
   */
  public static StagedOutput prepare(String output, boolean overwrite, Configuration conf) throws IOException {
    Path out = new Path(output);
    FileSystem fs = out.getFileSystem(conf);
    out = fs.makeQualified(out);
    if (fs.exists(out) && !overwrite) {
      throw new io.volpool.job.config.SettingsException("output " + out + " already exists; set spark.volpool.mode=overwrite"
          + " to replace it, or choose another spark.volpool.output");
    }
    Path parent = out.getParent();
    if (parent != null && !fs.exists(parent)) {
      fs.mkdirs(parent);
    }
    Path staging = new Path(parent, "." + out.getName() + ".volpool-staging-" + UUID.randomUUID());
    return new StagedOutput(fs, out, staging, overwrite);
  }

  public Path output() {
    return output;
  }

  /** Where the tasks write. */
  public Path staging() {
    return staging;
  }

  /** Writes a small text file (e.g. the run summary) into the staging directory. */
  public void writeText(String name, String text) throws IOException {
    try (OutputStream os = fs.create(new Path(staging, name), true)) {
      os.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** Moves the staged output into place (deleting an old output under overwrite). */
  public void commit() throws IOException {
    if (!fs.exists(staging)) {
      fs.mkdirs(staging);
    }
    if (fs.exists(output)) {
      if (!overwrite) {
        throw new IOException("output " + output + " appeared while the job ran; the result stays in " + staging);
      }
      if (!fs.delete(output, true)) {
        throw new IOException("could not delete the old output " + output + " (mode=overwrite); the new result stays in "
            + staging);
      }
    }
    if (!fs.rename(staging, output)) {
      throw new IOException("could not rename " + staging + " to " + output);
    }
  }

  /**
   * Deletes the staging directory after a failure; never throws. Tasks of the failed stage may
   * still be finishing and writing, so the deletion is retried until the directory stays gone.
   */
  public void abort() {
    for (int attempt = 0; attempt < 20; attempt++) {
      try {
        if (!fs.exists(staging)) {
          Thread.sleep(50);
          if (!fs.exists(staging)) {
            return;
          }
        }
        fs.delete(staging, true);
      } catch (IOException | RuntimeException e) {
        // try again: a task may be writing into it right now
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
