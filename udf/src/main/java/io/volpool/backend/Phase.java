package io.volpool.backend;

/**
 * The stages a volume's time is split into, summed over tasks in the run summary so the
 * bottleneck shows. Names are what the summary prints.
 */
public enum Phase {
  /** Input bytes read from storage (I/O and decompression), up to a value in memory or in a batch buffer. */
  READ("read"),
  /** Checking records and placing values into batch buffers (levels, dictionaries, byte order, copies). */
  DECODE("decode"),
  /** Waiting for room in the executor's memory budget (not counting the allocation once there is room). */
  WAIT_BUDGET("wait for budget"),
  /** Allocating new batch buffers (pinned host memory on the GPU: cuMemHostAlloc), as opposed to waiting for room. */
  ALLOCATE("allocate buffers"),
  /** Waiting for a free GPU stream (another task's batch is on the device). */
  WAIT_GPU("wait for GPU"),
  /** Host-to-device copies (CPU backend: none). */
  H2D("host to device"),
  /** The pipeline's kernels (CPU backend: the CPU kernels with their conversions). */
  KERNELS("kernels"),
  /** Device-to-host copies (CPU backend: none). */
  D2H("device to host"),
  /** Building output records and pages (pass-through columns, shapes, headers). */
  ENCODE("encode"),
  /** Writing output bytes to storage. */
  WRITE("write"),
  /** Committing task and job output (the driver's rename into place included). */
  COMMIT("commit"),
  /** Task time in none of the phases above: Spark's own work in the task, and what volpool does not time. */
  OTHER("other");

  private final String label;

  Phase(String label) {
    this.label = label;
  }

  public String label() {
    return label;
  }
}
