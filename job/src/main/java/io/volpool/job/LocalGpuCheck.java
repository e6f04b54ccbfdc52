package io.volpool.job;

import io.volpool.exec.ExecutorRuntime;

/**
 * {@code device=gpu} in local mode: the check that a usable GPU exists ({@link ExecutorRuntime#requireGpu}).
 * When this JVM has looked for CUDA already (the warm-up's probe ended: a missing driver or JCuda
 * library, no device, an old driver are all found at once), it runs now and fails before anything
 * is written. While the warm-up is still initialising CUDA (0.1-0.3 s on the H200, which is what a
 * working GPU takes), it runs on a thread of its own beside the job's submission, so the first
 * tasks deserialize meanwhile instead of after it; a failure found then fails the tasks too, with
 * the same {@code DeviceUnavailableException} (their stack traces come first in the log, then the
 * job's one line), and the job removes its staging and leaves the output untouched. The job waits
 * for the check before it commits (a job of no tasks meets no GPU).
 */
final class LocalGpuCheck {
  private final Thread thread;
  private volatile RuntimeException failure;

  private LocalGpuCheck() {
    thread = new Thread(() -> {
      try {
        ExecutorRuntime.requireGpu();
      } catch (RuntimeException e) {
        failure = e;
      }
    }, "volpool-gpu-check");
    thread.setDaemon(true);
  }

  /** Checks now when CUDA was probed already (throwing its failure), else starts the check beside the caller. */
  static LocalGpuCheck start() {
    LocalGpuCheck c = new LocalGpuCheck();
    if (ExecutorRuntime.gpuProbed()) {
      c.thread.run(); // on this thread: the answer is at hand
      c.require();
    } else {
      c.thread.start();
    }
    return c;
  }

  /** Waits for the check and returns why it failed, or null when a usable GPU exists. */
  RuntimeException failure() {
    boolean interrupted = false;
    while (thread.isAlive()) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        // the check ends by itself (the JVM's CUDA initialisation); the interrupt is kept for the caller
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return failure;
  }

  /** Waits for the check; throws its failure when there is no usable GPU. */
  void require() {
    RuntimeException f = failure();
    if (f != null) {
      throw f;
    }
  }
}
