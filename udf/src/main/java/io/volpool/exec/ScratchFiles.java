package io.volpool.exec;

import java.io.File;
import java.io.IOException;

/**
 * Where the engine puts a volume it spills to local disk (one larger than the memory budget, read
 * from a compressed page). The Spark layer gives the executor's local directories
 * ({@code spark.local.dir}); tools and tests the JVM's temporary directory.
 */
@FunctionalInterface
public interface ScratchFiles {
  /** A new empty file for {@code what} ("in" or "out"); the engine deletes it when done. */
  File create(String what) throws IOException;

  /** Files in {@code java.io.tmpdir}, deleted at JVM exit at the latest. */
  ScratchFiles TEMP = what -> {
    File f = File.createTempFile("volpool-" + what + "-", ".spill");
    f.deleteOnExit();
    return f;
  };
}
