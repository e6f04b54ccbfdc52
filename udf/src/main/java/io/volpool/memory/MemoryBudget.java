package io.volpool.memory;

import io.volpool.conf.VolpoolOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/**
 * The executor-wide limit on the bytes of volume data held in host memory at once: batch buffers
 * (pinned on the GPU backend, heap on the CPU backend, pooled) and the heap pages of input that
 * cannot be streamed. One per executor JVM ({@link #forJvm}); tasks wait for room instead of running
 * the JVM out of memory.
 *
 * <p>Pages may take at most half of the limit, so batches can always get the other half: a task
 * waits for page memory only while it holds no batch, and a task holding batches never waits for
 * pages, which rules out a circular wait. A single request above half of the limit can never be
 * granted and fails at once with {@link MemoryBudgetException}, which names the setting to raise.
 * Thread-safe.
 */
public final class MemoryBudget {
  /** The setting that sizes the budget, named in errors. */
  public static final String SETTING = VolpoolOptions.MEMORY_BUDGET.key();

  /** What the bytes are for. */
  public enum Use {
    /** Heap copies of input pages that cannot be streamed straight into a batch. */
    PAGES,
    /** Batch buffers: input, output and (CPU) intermediates of one batch. */
    BATCHES
  }

  private static MemoryBudget jvm;

  private final long limit;
  private final String setting;
  private final String kind;
  private long pages;
  private long batches;
  private long peak;
  private final List<Runnable> evictors = new CopyOnWriteArrayList<>();
  private BufferPool<Long, ByteBuffer> heapBuffers;

  public MemoryBudget(long limit) {
    this(limit, SETTING, "host memory");
  }

  /**
   * @param setting the setting that sizes this budget, named in errors
   * @param kind what the budget counts, e.g. {@code GPU memory of cuda:0}
   */
  public MemoryBudget(long limit, String setting, String kind) {
    if (limit <= 0) {
      throw new IllegalArgumentException(setting + " must be positive, got " + limit);
    }
    this.limit = limit;
    this.setting = setting;
    this.kind = kind;
  }

  /**
   * The budget of this JVM, created with {@code limit} bytes on first use. A later call with another
   * limit replaces it only while nothing is held (tests run jobs with different settings in one JVM).
   */
  /** The budget of this JVM, or null before the first task (or runtime) made one. */
  public static synchronized MemoryBudget jvmOrNull() {
    return jvm;
  }

  public static synchronized MemoryBudget forJvm(long limit) {
    if (jvm != null && jvm.limit != limit) {
      for (Runnable e : jvm.evictors) {
        e.run();
      }
      if (jvm.idle()) {
        jvm = null;
      }
    }
    if (jvm == null) {
      jvm = new MemoryBudget(limit);
    }
    return jvm;
  }

  /**
   * Refuses a budget larger than the heap {@code maxHeap} of the JVM that holds it.
   *
   * @throws MemoryBudgetException naming the setting, the budget and the heap
   */
  public static void requireFitsHeap(long budget, long maxHeap) {
    if (budget > maxHeap) {
      throw new MemoryBudgetException(SETTING + "=" + mib(budget) + " is more than this executor's whole heap ("
          + mib(maxHeap) + ", -Xmx or spark.executor.memory) can hold; batches and input pages live there, so set it to"
          + " at most " + mib(maxHeap) + ", or to auto (half the heap), or give executors more memory", budget, maxHeap);
    }
  }

  /**
   * The budget of {@code spark.volpool.memory.budget} in this JVM: the setting's bytes, or for
   * {@code auto} (0) half of this JVM's heap. Resolved here only: the executor's heap, not the driver's.
   */
  public static long bytesFor(long setting) {
    return setting > 0 ? setting : defaultLimit();
  }

  /** The default limit: half of this JVM's maximum heap. */
  public static long defaultLimit() {
    return Runtime.getRuntime().maxMemory() / 2;
  }

  public long limit() {
    return limit;
  }

  /** The largest single request of either use that can ever be granted. */
  public long maxRequest() {
    return limit / 2;
  }

  /**
   * Heap buffers (little-endian) by their exact size, pooled against this budget: counted while they
   * exist, idle or not, and dropped when a request finds no room. For buffers that tasks allocate again
   * and again at one size (a slabbed volume's output rows, up to 2 GiB each): each was zeroed, faulted
   * in and collected afresh.
   */
  public synchronized BufferPool<Long, ByteBuffer> heapBuffers() {
    if (heapBuffers == null) {
      heapBuffers = new BufferPool<>(this, new BufferPool.Allocator<>() {
        @Override
        public long bytes(Long key) {
          return key;
        }

        @Override
        public ByteBuffer allocate(Long key) {
          return ByteBuffer.allocate(Math.toIntExact(key)).order(ByteOrder.LITTLE_ENDIAN);
        }

        @Override
        public void free(ByteBuffer buffer) {
          // heap: the collector takes it
        }
      });
    }
    return heapBuffers;
  }

  /** Pools register a way to drop their idle buffers when a request finds no room. */
  public void addEvictor(Runnable evictIdle) {
    evictors.add(evictIdle);
  }

  public void removeEvictor(Runnable evictIdle) {
    evictors.remove(evictIdle);
  }

  private synchronized boolean idle() {
    return pages == 0 && batches == 0;
  }

  private boolean fits(long bytes, Use use) {
    if (use == Use.PAGES && pages + bytes > limit / 2) {
      return false;
    }
    return pages + batches + bytes <= limit;
  }

  /**
   * Takes {@code bytes} for {@code use}.
   *
   * @param mayWait wait until there is room; else return false at once when there is none
   * @param what names the request in the error, e.g. {@code "batch of 4 volumes [32, 128, 128, 256]"}
   * @return true when taken
   * @throws MemoryBudgetException when {@code bytes} exceeds {@link #maxRequest()}
   */
  public synchronized boolean acquire(long bytes, Use use, boolean mayWait, Supplier<String> what) {
    if (bytes > maxRequest()) {
      throw new MemoryBudgetException(what.get() + " needs " + mib(bytes) + " of " + kind + " at once, but the"
          + " budget admits at most " + mib(maxRequest()) + " per request (half of " + setting + "=" + mib(limit)
          + "); raise " + setting + " (and the memory behind it) to at least " + mib(2 * bytes)
          + ", or lower " + VolpoolOptions.BATCH_SIZE.key(), bytes, limit);
    }
    while (!fits(bytes, use)) {
      for (Runnable e : evictors) {
        e.run();
        if (fits(bytes, use)) {
          break;
        }
      }
      if (fits(bytes, use)) {
        break;
      }
      if (!mayWait) {
        return false;
      }
      try {
        wait(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for " + mib(bytes) + " of the memory budget", e);
      }
    }
    add(bytes, use);
    return true;
  }

  /**
   * Takes {@code bytes} for {@code use} if they fit as things stand, without asking any pool to drop idle
   * buffers and without waiting; false when they do not fit.
   */
  public synchronized boolean tryAcquire(long bytes, Use use) {
    if (bytes > maxRequest() || !fits(bytes, use)) {
      return false;
    }
    add(bytes, use);
    return true;
  }

  /** Takes {@code bytes} now even beyond the limit (small pages that must be read in the middle of a value). */
  public synchronized void forceAcquire(long bytes, Use use) {
    add(bytes, use);
  }

  /** Counts {@code bytes} taken for {@code use}, and the peak; holding the lock. */
  private void add(long bytes, Use use) {
    if (use == Use.PAGES) {
      pages += bytes;
    } else {
      batches += bytes;
    }
    peak = Math.max(peak, pages + batches);
  }

  public synchronized void release(long bytes, Use use) {
    if (use == Use.PAGES) {
      pages -= bytes;
    } else {
      batches -= bytes;
    }
    if (pages < 0 || batches < 0) {
      throw new IllegalStateException("memory budget released more than it gave out (pages " + pages + ", batches "
          + batches + ")");
    }
    notifyAll();
  }

  /** Bytes held now. */
  public synchronized long used() {
    return pages + batches;
  }

  /** The most bytes held at once since this budget was made. */
  public synchronized long peak() {
    return peak;
  }

  public static String mib(long bytes) {
    return String.format("%.1f MiB", bytes / 1048576.0);
  }
}
