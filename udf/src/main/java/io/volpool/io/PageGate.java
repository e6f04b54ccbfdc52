package io.volpool.io;

/**
 * How a reader asks for memory to hold an input page that cannot be streamed into a batch: the
 * batch runner decides whether the reader may wait for it (only while the runner holds no batch,
 * which keeps the budget free of circular waits). Pages loaded in the middle of a value cannot
 * step back and are taken at once ({@link #force}).
 */
public interface PageGate {
  /** Takes {@code bytes} of page memory; false when the caller must first let the runner free its batches. */
  boolean acquire(long bytes, String what);

  /** Takes {@code bytes} of page memory now, even beyond the budget (pages loaded mid-value, which are small). */
  void force(long bytes);

  /** Gives back page memory. */
  void release(long bytes);

  /** A gate that never refuses (tools and tests). */
  PageGate UNLIMITED = new PageGate() {
    @Override
    public boolean acquire(long bytes, String what) {
      return true;
    }

    @Override
    public void force(long bytes) {}

    @Override
    public void release(long bytes) {}
  };

  /** Thrown by a reader whose gate refused: the runner frees its batches and asks again. Carries no stack. */
  final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public Refused() {
      super("page memory refused", null, false, false);
    }
  }

  /** A gate whose memory is a budget's page memory; subclasses decide how {@link #acquire} waits. */
  abstract class Budgeted implements PageGate {
    protected final io.volpool.memory.MemoryBudget budget;

    protected Budgeted(io.volpool.memory.MemoryBudget budget) {
      this.budget = budget;
    }

    @Override
    public void force(long bytes) {
      budget.forceAcquire(bytes, io.volpool.memory.MemoryBudget.Use.PAGES);
    }

    @Override
    public void release(long bytes) {
      budget.release(bytes, io.volpool.memory.MemoryBudget.Use.PAGES);
    }
  }
}
