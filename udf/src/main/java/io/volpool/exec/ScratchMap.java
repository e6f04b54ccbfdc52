package io.volpool.exec;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;

/**
 * One mapped scratch file that a task reuses for every volume it spills ("in" copies of compressed
 * volumes, or "out" planes of slabbed ones), grown when a larger volume comes. A fresh file per
 * volume made every write fault in and zero new pages (1-2 GB/s on the H200 machine, against about
 * 10 GB/s into pages already mapped); a slabbed volume's output went through two such writes. The
 * file lives in the executor's local directories and is deleted on {@link #close()}.
 */
final class ScratchMap implements AutoCloseable {
  private final ScratchFiles files;
  private final String what;
  private File file;
  private MappedByteBuffer map;

  ScratchMap(ScratchFiles files, String what) {
    this.files = files;
    this.what = what;
  }

  /**
   * A little-endian buffer over the first {@code bytes} of the file (position 0, limit and capacity
   * {@code bytes}), holding whatever the last volume left there: every byte must be written before
   * it is read. Valid until the next call or {@link #close()}, so the caller asks for the next
   * volume's region only once the last one's reader is done.
   */
  ByteBuffer region(long bytes) {
    if (bytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("a spilled region of " + (bytes >> 20) + " MiB is more than one mapping holds (2 GiB)");
    }
    if (map == null || map.capacity() < bytes) {
      close();
      file = create();
      map = map(file, bytes);
    }
    return map.slice(0, (int) bytes).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** The file now mapped, or null (for tests). */
  File file() {
    return file;
  }

  private File create() {
    try {
      return files.create(what);
    } catch (IOException e) {
      throw new UncheckedIOException("creating a spill file for a volume larger than the memory budget: " + e.getMessage(), e);
    }
  }

  private static MappedByteBuffer map(File f, long bytes) {
    // a mapping of a sparse file gets its blocks as it is written: on a full disk that is a SIGBUS, so the room
    // is checked first (another writer may still take it meanwhile; the task then fails naming the same folder)
    long free = f.getParentFile() == null ? Long.MAX_VALUE : f.getParentFile().getUsableSpace();
    if (free > 0 && free < bytes) {
      throw new IllegalStateException(("a scratch file of " + (bytes >> 20) + " MiB does not fit"
          + " in " + f.getParentFile() + ", which has " + (free >> 20) + " MiB free: spark.local.dir (the executor's local"
          + " directories) is too small for this volume's slabs; give it room or point spark.local.dir at a larger disk"));
    }
    try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      return ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes);
    } catch (IOException e) {
      throw new UncheckedIOException("mapping " + (bytes >> 20) + " MiB of spill file " + f + " (is the executor's local"
          + " directory, spark.local.dir, on a disk with room?): " + e.getMessage(), e);
    }
  }

  /** Unmaps and deletes the file; the next {@link #region} makes a new one. Safe to call twice. */
  @Override
  public void close() {
    Mapped.release(map);
    map = null;
    if (file != null) {
      try {
        Files.deleteIfExists(file.toPath());
      } catch (IOException e) {
        // best effort: Spark removes its local directories when the executor exits
      }
      file = null;
    }
  }
}
