package io.volpool.memory;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Offsets into one preallocated region (the GPU backend's pinned pool): first fit over the free
 * ranges, each block aligned, freed ranges merged with their free neighbours so the region does
 * not splinter. It only does the arithmetic; the owner maps offsets to memory. Thread-safe.
 */
public final class Arena {
  private final long size;
  private final long align;
  /** Free ranges: offset to length, none adjacent to another. */
  private final TreeMap<Long, Long> free = new TreeMap<>();
  /** Blocks handed out: offset to length (rounded up to the alignment). */
  private final Map<Long, Long> taken = new HashMap<>();
  private long used;

  /**
   * @param size bytes of the region
   * @param align every block's offset and length are a multiple of this (a power of two)
   */
  public Arena(long size, long align) {
    if (size <= 0 || align <= 0 || Long.bitCount(align) != 1) {
      throw new IllegalArgumentException("arena of " + size + " bytes aligned to " + align);
    }
    this.size = size - size % align;
    this.align = align;
    if (this.size > 0) {
      free.put(0L, this.size);
    }
  }

  /** The offset of a new block of at least {@code bytes}, or -1 when no free range is large enough. */
  public synchronized long take(long bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException("block of " + bytes + " bytes");
    }
    long len = (bytes + align - 1) & -align;
    for (Map.Entry<Long, Long> e : free.entrySet()) {
      long at = e.getKey();
      long have = e.getValue();
      if (have >= len) {
        // read before removing: TreeMap may reuse the removed entry's node for its successor
        free.remove(at);
        if (have > len) {
          free.put(at + len, have - len);
        }
        taken.put(at, len);
        used += len;
        return at;
      }
    }
    return -1;
  }

  /** Returns the block at {@code offset}, merging it with free neighbours. */
  public synchronized void give(long offset) {
    Long len = taken.remove(offset);
    if (len == null) {
      throw new IllegalStateException("no block of this arena starts at offset " + offset);
    }
    used -= len;
    long at = offset;
    long end = offset + len;
    Map.Entry<Long, Long> before = free.floorEntry(at);
    if (before != null && before.getKey() + before.getValue() == at) {
      at = before.getKey();
      free.remove(at);
    }
    Long after = free.remove(end);
    if (after != null) {
      end += after;
    }
    free.put(at, end - at);
  }

  /** Bytes of the region (a multiple of the alignment). */
  public long size() {
    return size;
  }

  /** Bytes in blocks handed out. */
  public synchronized long used() {
    return used;
  }

  /** The largest block {@link #take} could hand out now. */
  public synchronized long largestFree() {
    return free.values().stream().mapToLong(Long::longValue).max().orElse(0);
  }
}
