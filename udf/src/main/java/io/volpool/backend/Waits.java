package io.volpool.backend;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * Waiting for work on another thread to end before what it uses is freed. A wait that an interrupt
 * cut short would let a reader go on writing into a buffer its owner then frees (native memory, pinned
 * or direct: a crash, not an exception), so these waits see the work through and keep the interrupt
 * for the caller's next interruptible step. The work waited for is bounded (one slab's read).
 */
public final class Waits {
  private Waits() {}

  /** Waits until {@code f} is done, through interrupts (the flag is set again after); rethrows what it threw. */
  public static <T> T done(Future<T> f) throws ExecutionException {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return f.get();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
