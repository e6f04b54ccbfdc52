package io.volpool.memory;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.TreeMap;

/**
 * The direct buffers that input pages are read and decompressed into, shared by every reader of
 * this JVM: a reader takes one for as long as it reads a file's pages and gives it back when done,
 * so the next task (Spark runs one per split) finds it ready. Allocating a fresh 20 MiB direct
 * buffer per task and page kind cost as much as reading the page (the JDK zeroes it, and every page
 * of it faults in on first touch): a task reads one or two row groups, so every task allocated.
 *
 * <p>Buffers are whole MiB. Idle buffers are kept up to {@link #idleLimit()} bytes (a sixteenth of
 * the heap, the JVM's default limit of direct memory being the heap); beyond that a returned buffer
 * is freed at once. The bytes of a buffer in use are counted by its reader's page lease in the
 * {@link MemoryBudget}. Thread-safe; one per JVM.
 */
public final class PageBuffers {
  private static final long MIB = 1L << 20;
  private static final long IDLE_LIMIT = Math.max(64 * MIB, Runtime.getRuntime().maxMemory() / 16);
  /** Idle buffers by capacity. */
  private static final TreeMap<Integer, ArrayDeque<ByteBuffer>> IDLE = new TreeMap<>();
  private static long idleBytes;
  private static long allocations;

  private PageBuffers() {}

  /** The most idle bytes kept for reuse. */
  public static long idleLimit() {
    return IDLE_LIMIT;
  }

  /**
   * A direct buffer of at least {@code size} bytes, cleared, its limit at {@code size}: an idle one
   * (the smallest that fits, if it is at most twice the size), else a new one of whole MiB.
   */
  public static ByteBuffer take(int size) {
    synchronized (PageBuffers.class) {
      Map.Entry<Integer, ArrayDeque<ByteBuffer>> e = IDLE.ceilingEntry(size);
      if (e != null && e.getKey() <= 2L * Math.max(size, MIB)) {
        ByteBuffer b = e.getValue().pop();
        if (e.getValue().isEmpty()) {
          IDLE.remove(e.getKey());
        }
        idleBytes -= b.capacity();
        return b.clear().limit(size);
      }
      allocations++;
    }
    long cap = Math.min(Integer.MAX_VALUE - MIB + 1, (size + MIB - 1) & ~(MIB - 1));
    return ByteBuffer.allocateDirect((int) Math.max(size, cap)).limit(size);
  }

  /** Gives back a buffer from {@link #take} (no view of it may be used afterwards); null is ignored. */
  public static void give(ByteBuffer b) {
    if (b == null) {
      return;
    }
    synchronized (PageBuffers.class) {
      if (idleBytes + b.capacity() <= IDLE_LIMIT) {
        IDLE.computeIfAbsent(b.capacity(), k -> new ArrayDeque<>()).push(b);
        idleBytes += b.capacity();
        return;
      }
    }
    DirectBuffers.free(b);
  }

  /** Buffers allocated since the JVM started (tests check reuse). */
  public static synchronized long allocations() {
    return allocations;
  }

  /** Idle bytes held now. */
  public static synchronized long idleBytes() {
    return idleBytes;
  }

  /** Frees every idle buffer (tests; a JVM's buffers otherwise live as long as it does). */
  public static void freeIdle() {
    ArrayDeque<ByteBuffer> all = new ArrayDeque<>();
    synchronized (PageBuffers.class) {
      IDLE.values().forEach(all::addAll);
      IDLE.clear();
      idleBytes = 0;
    }
    all.forEach(DirectBuffers::free);
  }
}
