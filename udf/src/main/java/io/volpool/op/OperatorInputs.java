package io.volpool.op;

import io.volpool.conf.ConfKey;
import java.io.IOException;
import java.util.Map;

/** What an {@link Operator} reads its stage from: the job's settings and the files they name. */
public interface OperatorInputs {
  /** The {@code spark.volpool.*} settings as set (read them through their {@link ConfKey}). */
  Map<String, String> values();

  /**
   * The bytes of the file setting {@code key} names, on the job's filesystem; recorded in the
   * output's provenance as {@code volpool.<role>} (its path) and {@code volpool.<role>.sha256}.
   *
   * @throws io.volpool.conf.SettingsException when the setting is missing, the file is absent or a folder
   */
  byte[] readFile(ConfKey<String> key, String role, String why, HeadCheck check) throws IOException;

  /**
   * Checks a file from its first bytes and its length before it is read whole, so that a file that
   * is not of its format (a 20 GB image, {@code /dev/zero}) is refused instead of filling the heap.
   */
  @FunctionalInterface
  interface HeadCheck {
    /** Throws naming the rule when the file that starts with {@code head} and holds {@code length} bytes is unusable. */
    void check(java.io.InputStream head, long length) throws IOException;
  }
}
