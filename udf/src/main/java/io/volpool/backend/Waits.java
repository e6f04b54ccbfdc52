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

  /**
   * Waits until {@code f} is done, through interrupts (the flag is set again after), and rethrows what it
   * threw: an unchecked throwable as it is, a checked one inside an {@link IllegalStateException} that
   * names {@code what} was done.
   */
  public static <T> T done(Future<T> f, String what) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return f.get();
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (ExecutionException e) {
          Throwable c = e.getCause();
          if (c instanceof RuntimeException r) {
            throw r;
          }
          if (c instanceof Error er) {
            throw er;
          }
          throw new IllegalStateException(what + ": " + c, c);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
