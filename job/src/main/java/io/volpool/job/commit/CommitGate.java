package io.volpool.job.commit;

/**
 * Where a run stands against a stopping signal (SIGINT, SIGTERM, SIGHUP), one per JVM: before its commit a
 * signal stops the run (the commit refuses to begin, the run is rolled back, its exit code is the signal's);
 * once the commit has begun it is finished, so the output is whole, and the signal is only noted: the run
 * reports success and exits 0. The console, the status file and the exit code then tell one story.
 */
public final class CommitGate {
  private static final Object LOCK = new Object();
  private static boolean committing;
  private static sun.misc.Signal stopped;
  private static sun.misc.Signal deferred;

  private CommitGate() {}

  /**
   * A signal arrived: true when a commit is under way or done (the signal waits: the run finishes), false when
   * the run is to stop (and no commit will begin).
   */
  public static boolean defer(sun.misc.Signal s) {
    synchronized (LOCK) {
      if (committing) {
        deferred = s;
        return true;
      }
      stopped = s;
      return false;
    }
  }

  /**
   * The commit begins: from here a signal no longer stops the run.
   *
   * @throws java.io.InterruptedIOException when a signal stopped the run already (nothing is committed)
   */
  static void enter() throws java.io.InterruptedIOException {
    synchronized (LOCK) {
      if (stopped != null) {
        throw new java.io.InterruptedIOException("stopped by SIG" + stopped.getName() + " before the commit; nothing"
            + " was committed");
      }
      committing = true;
    }
  }

  /** The commit failed: the output is as before it, and a signal stops the run again. */
  public static void failed() {
    synchronized (LOCK) {
      committing = false;
    }
  }

  /** A signal that arrived during or after the commit and waited; null if none. */
  public static sun.misc.Signal deferred() {
    synchronized (LOCK) {
      return deferred;
    }
  }

  /** For tests running several jobs in one JVM: a new run starts with no commit and no signal. */
  public static void reset() {
    synchronized (LOCK) {
      committing = false;
      stopped = null;
      deferred = null;
    }
  }
}
