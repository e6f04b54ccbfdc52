package io.volpool.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The budget's rules: requests above half fail at once, pages never take more than half, waiters wake on release. */
class MemoryBudgetTest {
  @Test
  void aRequestAboveHalfTheLimitFailsNamingTheSetting() {
    MemoryBudget b = new MemoryBudget(1000);
    assertThatThrownBy(() -> b.acquire(501, MemoryBudget.Use.BATCHES, true, () -> "volume v7"))
        .isInstanceOf(MemoryBudgetException.class)
        .hasMessageContaining("volume v7 needs 0.0 MiB").hasMessageContaining("spark.volpool.memory.budget")
        .hasMessageContaining("at most");
    assertThat(b.acquire(500, MemoryBudget.Use.BATCHES, false, () -> "x")).isTrue();
  }

  @Test
  void pagesTakeAtMostHalfSoBatchesAlwaysGetTheOtherHalf() {
    MemoryBudget b = new MemoryBudget(1000);
    assertThat(b.acquire(300, MemoryBudget.Use.PAGES, false, () -> "p")).isTrue();
    assertThat(b.acquire(200, MemoryBudget.Use.PAGES, false, () -> "p")).isTrue();
    assertThat(b.acquire(1, MemoryBudget.Use.PAGES, false, () -> "p")).as("pages at half").isFalse();
    assertThat(b.acquire(500, MemoryBudget.Use.BATCHES, false, () -> "b")).isTrue();
    assertThat(b.acquire(1, MemoryBudget.Use.BATCHES, false, () -> "b")).isFalse();
    assertThat(b.used()).isEqualTo(1000);
    assertThat(b.peak()).isEqualTo(1000);
    b.release(500, MemoryBudget.Use.PAGES);
    assertThat(b.used()).isEqualTo(500);
    assertThatThrownBy(() -> b.release(1, MemoryBudget.Use.PAGES)).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aWaiterProceedsWhenAnotherReleases() throws Exception {
    MemoryBudget b = new MemoryBudget(1000);
    b.acquire(500, MemoryBudget.Use.BATCHES, true, () -> "a");
    b.acquire(400, MemoryBudget.Use.BATCHES, true, () -> "a");
    CountDownLatch got = new CountDownLatch(1);
    Thread t = new Thread(() -> {
      b.acquire(300, MemoryBudget.Use.BATCHES, true, () -> "b");
      got.countDown();
    });
    t.start();
    // the waiter must really be inside acquire, waiting on the budget, before we check that it waits
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (t.getState() != Thread.State.TIMED_WAITING && t.getState() != Thread.State.WAITING) {
      assertThat(System.nanoTime()).as("the waiter never started waiting").isLessThan(deadline);
      Thread.sleep(1);
    }
    assertThat(got.getCount()).as("must wait while 900 of 1000 are held").isEqualTo(1);
    Thread.sleep(150); // past the budget's own 100 ms recheck: still waiting
    assertThat(got.getCount()).as("must still wait after a recheck").isEqualTo(1);
    assertThat(t.isAlive()).isTrue();
    b.release(400, MemoryBudget.Use.BATCHES);
    assertThat(got.await(5, TimeUnit.SECONDS)).isTrue();
    t.join();
  }

  @Test
  void idleBuffersOfAPoolAreDroppedWhenARequestFindsNoRoom() {
    MemoryBudget b = new MemoryBudget(1000);
    AtomicInteger freed = new AtomicInteger();
    BufferPool<Long, byte[]> pool = new BufferPool<>(b, new Bytes(0, freed));
    byte[] a = pool.take(400L, false, () -> "a");
    byte[] c = pool.take(400L, false, () -> "c");
    pool.give(400L, a);
    assertThat(pool.take(400L, false, () -> "again")).as("reused, not reallocated").isSameAs(a);
    pool.give(400L, a);
    pool.give(400L, c);
    assertThat(b.used()).as("idle buffers still count").isEqualTo(800);
    assertThat(pool.take(300L, false, () -> "other size")).isNotNull();
    assertThat(freed.get()).as("idle 400-byte buffers dropped for the 300-byte one").isEqualTo(2);
    assertThat(b.used()).isEqualTo(300);
    byte[] d = pool.take(300L, false, () -> "d");
    pool.give(300L, d);
    assertThat(b.used()).as("one 300-byte buffer in use, one idle").isEqualTo(600);
    pool.close();
    assertThat(freed.get()).as("close frees the idle buffer").isEqualTo(3);
    assertThat(b.used()).as("the buffer still out is still counted").isEqualTo(300);
    pool.give(300L, new byte[300]);
    assertThat(freed.get()).as("a buffer given back after close is freed, not kept").isEqualTo(4);
    assertThat(b.used()).isZero();
    assertThatThrownBy(() -> pool.take(300L, false, () -> "after close")).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aTakeThatAllocatesCountsItsAllocationTimeApartFromWaiting() {
    MemoryBudget b = new MemoryBudget(1000);
    BufferPool<Long, byte[]> pool = new BufferPool<>(b, new Bytes(60, new AtomicInteger())); // as slow as pinning
    long a0 = BufferPool.allocatingNanos();
    byte[] x = pool.take(100L, false, () -> "x");
    long allocated = BufferPool.allocatingNanos() - a0;
    assertThat(allocated).as("a new buffer's allocation is counted").isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(60));
    pool.give(100L, x);
    long a1 = BufferPool.allocatingNanos();
    assertThat(pool.take(100L, false, () -> "again")).isSameAs(x);
    assertThat(BufferPool.allocatingNanos() - a1).as("reusing an idle buffer allocates nothing").isZero();
    pool.close();
  }

  /** Heap buffers of {@code key} bytes, each allocation taking {@code millis}, counting frees. */
  record Bytes(long millis, AtomicInteger freed) implements BufferPool.Allocator<Long, byte[]> {
    @Override
    public long bytes(Long key) {
      return key;
    }

    @Override
    public byte[] allocate(Long key) {
      try {
        Thread.sleep(millis);
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
      return new byte[key.intValue()];
    }

    @Override
    public void free(byte[] buffer) {
      freed.incrementAndGet();
    }
  }
}
