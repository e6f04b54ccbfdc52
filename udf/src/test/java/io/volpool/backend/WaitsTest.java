package io.volpool.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class WaitsTest {
  /** An interrupt does not cut the wait short (the work may still write into memory about to be freed); it is kept. */
  @Test
  void anInterruptedWaitSeesTheWorkThroughAndKeepsTheInterrupt() throws Exception {
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicBoolean finished = new AtomicBoolean();
      Future<String> work = pool.submit(() -> {
        started.countDown();
        release.await();
        finished.set(true);
        return "read";
      });
      started.await();
      Thread caller = Thread.currentThread();
      // interrupt the waiting caller, then let the work end a little later
      Thread helper = new Thread(() -> {
        try {
          Thread.sleep(100);
          caller.interrupt();
          Thread.sleep(100);
        } catch (InterruptedException e) {
          return;
        }
        release.countDown();
      });
      helper.start();
      String got = Waits.done(work, "reading");
      boolean flag = Thread.interrupted();
      helper.join();
      assertThat(got).isEqualTo("read");
      assertThat(finished).as("the work ended before the wait returned").isTrue();
      assertThat(flag).as("the interrupt is kept for the caller").isTrue();
    } finally {
      pool.shutdownNow();
      pool.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void whatTheWorkThrewIsRethrownUncheckedAsItIsCheckedNamingTheWork() {
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      IllegalArgumentException bad = new IllegalArgumentException("bad row");
      Future<Object> unchecked = pool.submit(() -> {
        throw bad;
      });
      assertThatThrownBy(() -> Waits.done(unchecked, "reading a row of v")).isSameAs(bad);
      Future<Object> checked = pool.submit(() -> {
        throw new IOException("disk gone");
      });
      assertThatThrownBy(() -> Waits.done(checked, "reading a row of v")).isInstanceOf(IllegalStateException.class)
          .hasMessage("reading a row of v: java.io.IOException: disk gone").hasCauseInstanceOf(IOException.class);
    } finally {
      pool.shutdownNow();
    }
  }
}
