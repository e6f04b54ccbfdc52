package io.volpool.io.npy;

import java.io.Serializable;

/**
 * One .npy input file as planned on the driver.
 *
 * @param path the file's full path
 * @param relative its path below the input root (the output keeps it)
 * @param length its size in bytes when listed
 * @param modified its modification time when listed (ms since the epoch), or -1 when not known
 */
public record NpyFileRef(String path, String relative, long length, long modified) implements Serializable {
  /** A file whose modification time is not known (not checked). */
  public NpyFileRef(String path, String relative, long length) {
    this(path, relative, length, -1);
  }
}
