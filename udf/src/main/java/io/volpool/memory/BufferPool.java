package io.volpool.memory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Reusable buffers, counted against a {@link MemoryBudget} while they exist, idle or not.
 * Allocation is expensive for pinned memory (cuMemHostAlloc) and for large heap arrays, so buffers
 * go back to the pool and are dropped only when the budget needs room for something else. Buffers
 * are looked up by an exact key (a job has one or two volume shapes, so keys repeat). Thread-safe;
 * owned by a backend, which {@link #close()}s it.
 *
 * @param <K> what identifies a buffer's layout; equal keys give interchangeable buffers
 * @param <T> the buffer type
 */
public final class BufferPool<K, T> implements AutoCloseable {
  /** Makes and frees buffers. */
  public interface Allocator<K, T> {
    /** The bytes a buffer of this key holds. */
    long bytes(K key);

    T allocate(K key);

    void free(T buffer);
  }

  private final MemoryBudget budget;
  private final Allocator<K, T> allocator;
  private final Map<K, ArrayDeque<T>> idle = new HashMap<>();
  /** Buffers of each key taken and not yet given back. */
  private final Map<K, Integer> out = new HashMap<>();
  private final Runnable evictor = this::evictIdle;
  private boolean closed;

  public BufferPool(MemoryBudget budget, Allocator<K, T> allocator) {
    this.budget = budget;
    this.allocator = allocator;
    budget.addEvictor(evictor);
  }

  public MemoryBudget budget() {
    return budget;
  }

  /**
   * A buffer for {@code key}: an idle one, or a new one once the budget has room.
   *
   * @return null when {@code mayWait} is false and the budget has no room now
   * @throws MemoryBudgetException when the budget can never hold one such buffer
   */
  public T take(K key, boolean mayWait, Supplier<String> what) {
    long bytes = allocator.bytes(key);
    while (true) {
      synchronized (this) {
        T t = poll(key);
        if (t != null) {
          return t;
        }
      }
      if (budget.acquire(bytes, MemoryBudget.Use.BATCHES, false, what)) {
        return allocate(key, bytes);
      }
      if (!mayWait) {
        return null;
      }
      synchronized (this) {
        if (idle.containsKey(key) && !idle.get(key).isEmpty()) {
          continue;
        }
        if (out.getOrDefault(key, 0) > 0) {
          // a buffer of this key will come back: wait for it rather than for the budget, which would
          // free the returned buffer to make room and have this thread allocate another (a pinned
          // block costs milliseconds to allocate and to free)
          try {
            wait(50);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a buffer for " + what.get(), e);
          }
          continue;
        }
      }
      // none of this key is out: only the budget can make room (it evicts idle buffers of other keys)
      budget.acquire(bytes, MemoryBudget.Use.BATCHES, true, what);
      return allocate(key, bytes);
    }
  }

  /**
   * A buffer for {@code key} without touching anything else: an idle one, or a new one when the budget has
   * room as it stands (no pool is asked to drop idle buffers for it); else null at once.
   */
  public T takeIfRoom(K key) {
    long bytes = allocator.bytes(key);
    synchronized (this) {
      T t = poll(key);
      if (t != null) {
        return t;
      }
    }
    return budget.tryAcquire(bytes, MemoryBudget.Use.BATCHES) ? allocate(key, bytes) : null;
  }

  /** An idle buffer of {@code key}, counted as out, or null; holding the lock. */
  private T poll(K key) {
    if (closed) {
      throw new IllegalStateException("buffer pool closed");
    }
    ArrayDeque<T> q = idle.get(key);
    if (q == null || q.isEmpty()) {
      return null;
    }
    out.merge(key, 1, Integer::sum);
    return q.poll();
  }

  /** A new buffer of {@code key}, whose {@code bytes} the caller took from the budget. */
  private T allocate(K key, long bytes) {
    long a0 = System.nanoTime();
    try {
      T t = allocator.allocate(key);
      synchronized (this) {
        out.merge(key, 1, Integer::sum);
      }
      return t;
    } catch (RuntimeException | Error e) {
      budget.release(bytes, MemoryBudget.Use.BATCHES);
      throw e;
    } finally {
      ALLOCATING.get()[0] += System.nanoTime() - a0;
    }
  }

  /** Nanoseconds this thread spent allocating new buffers (any pool): callers timing a take split it off. */
  private static final ThreadLocal<long[]> ALLOCATING = ThreadLocal.withInitial(() -> new long[1]);

  /** This thread's allocation time so far, in nanoseconds; the difference over a call is that call's share. */
  public static long allocatingNanos() {
    return ALLOCATING.get()[0];
  }

  /** Returns a buffer taken with {@code key}. */
  public void give(K key, T buffer) {
    synchronized (this) {
      out.merge(key, -1, Integer::sum);
      notifyAll();
      if (!closed) {
        idle.computeIfAbsent(key, b -> new ArrayDeque<>()).add(buffer);
        return;
      }
    }
    allocator.free(buffer);
    budget.release(allocator.bytes(key), MemoryBudget.Use.BATCHES);
  }

  /** Frees every idle buffer (the budget calls this when a request finds no room). */
  public void evictIdle() {
    List<Map.Entry<K, T>> drop = new ArrayList<>();
    synchronized (this) {
      for (Map.Entry<K, ArrayDeque<T>> e : idle.entrySet()) {
        for (T t : e.getValue()) {
          drop.add(Map.entry(e.getKey(), t));
        }
      }
      idle.clear();
    }
    for (Map.Entry<K, T> e : drop) {
      allocator.free(e.getValue());
      budget.release(allocator.bytes(e.getKey()), MemoryBudget.Use.BATCHES);
    }
  }

  /** Frees the idle buffers; buffers still out are freed when given back. Idempotent. */
  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      notifyAll();
    }
    budget.removeEvictor(evictor);
    evictIdle();
  }
}
