package io.volpool.exec;

import java.nio.MappedByteBuffer;

/**
 * Unmaps a spill file's mapping when the engine is done with it, instead of when the collector
 * happens to free its buffer: a deleted file stays on disk (and its pages in memory, counted in the
 * executor's RSS and its container's memory) for as long as it is mapped, so a task spilling volume
 * after volume would otherwise hold them all. See
 * {@link io.volpool.memory.DirectBuffers}.
 */
final class Mapped {
  private Mapped() {}

  /**
   * Unmaps {@code b} (the buffer {@code FileChannel.map} returned, not a view of it) at once. No view
   * of it may be used afterwards: callers release a mapping only once its last reader is done.
   */
  static void release(MappedByteBuffer b) {
    io.volpool.memory.DirectBuffers.free(b);
  }
}
