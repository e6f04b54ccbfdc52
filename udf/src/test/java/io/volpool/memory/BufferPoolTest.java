package io.volpool.memory;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A buffer given back goes to a task waiting for one of its key instead of being freed for the
 * budget and allocated again (pinned blocks cost milliseconds each way); a task waiting for a key
 * nobody holds still gets room from the budget, which evicts idle buffers of other keys.
 */
class BufferPoolTest {
  private static final long MIB = 1 << 20;

  /** Counts allocations and frees; buffers are numbered. */
  private static final class Counting implements BufferPool.Allocator<String, Integer> {
    final AtomicInteger allocated = new AtomicInteger();
    final AtomicInteger freed = new AtomicInteger();

    @Override
    public long bytes(String key) {
      return 8 * MIB;
    }

    @Override
    public Integer allocate(String key) {
      return allocated.incrementAndGet();
    }

    @Override
    public void free(Integer buffer) {
      freed.incrementAndGet();
    }
  }

  @Test
  void aReturnedBufferGoesToTheTaskWaitingForItsKey() throws Exception {
    MemoryBudget budget = new MemoryBudget(16 * MIB);
    budget.forceAcquire(1, MemoryBudget.Use.BATCHES); // room for one 8 MiB buffer only
    Counting c = new Counting();
    try (BufferPool<String, Integer> pool = new BufferPool<>(budget, c)) {
      Integer a = pool.take("k", true, () -> "a");
      CompletableFuture<Integer> b = CompletableFuture.supplyAsync(() -> pool.take("k", true, () -> "b"));
      Thread.sleep(200);
      assertThat(b).as("no room: b waits").isNotDone();
      pool.give("k", a);
      assertThat(b.get(5, TimeUnit.SECONDS)).as("b gets a's buffer").isEqualTo(a);
      assertThat(c.allocated).as("allocations").hasValue(1);
      assertThat(c.freed).as("frees").hasValue(0);
      pool.give("k", a);
    }
    assertThat(c.freed).as("freed on close").hasValue(1);
  }

  @Test
  void aTaskWaitingForAKeyNobodyHoldsGetsRoomFromTheBudget() throws Exception {
    MemoryBudget budget = new MemoryBudget(16 * MIB);
    budget.forceAcquire(1, MemoryBudget.Use.BATCHES);
    Counting c = new Counting();
    try (BufferPool<String, Integer> pool = new BufferPool<>(budget, c)) {
      Integer a = pool.take("k", true, () -> "a");
      CompletableFuture<Integer> b = CompletableFuture.supplyAsync(() -> pool.take("other", true, () -> "b"));
      Thread.sleep(200);
      assertThat(b).isNotDone();
      pool.give("k", a);
      assertThat(b.get(5, TimeUnit.SECONDS)).as("a new buffer once a's idle one is evicted").isEqualTo(2);
      assertThat(c.freed).hasValue(1);
      pool.give("other", 2);
    }
  }
}
