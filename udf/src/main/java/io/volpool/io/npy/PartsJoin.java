package io.volpool.io.npy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * How the driver joins one .npy file's committed parts, in order, into the file
 * ({@link NpyPlanesInPlace.Mode#COPIED_PARTS}): a store that copies inside itself does it without a byte
 * through the driver (S3: {@code io.volpool.job.commit.S3aUploads#joinByCopies}); {@link #streamed} is
 * the join of any filesystem, through this JVM.
 */
@FunctionalInterface
public interface PartsJoin {
  /** Writes the bytes of {@code parts}, in order, as the new file {@code target}. */
  void join(FileSystem fs, List<Path> parts, Path target) throws IOException;

  /** The parts' bytes read and written, in order, into a new file (any filesystem; the bytes pass through here). */
  static void streamed(FileSystem fs, List<Path> parts, Path target) throws IOException {
    byte[] buf = new byte[1 << 20];
    try (OutputStream out = fs.create(target, false)) {
      for (Path p : parts) {
        try (InputStream in = fs.open(p)) {
          int n;
          while ((n = in.read(buf)) > 0) {
            out.write(buf, 0, n);
          }
        }
      }
    }
  }
}
