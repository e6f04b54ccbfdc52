package io.volpool.exec;

/**
 * Progress through one volume that runs in slabs: its input bytes are counted as its slabs finish,
 * in proportion to the output planes done, and exactly once all are, so progress moves through a
 * volume of gigabytes instead of jumping when it ends. One per task run, reused volume after volume.
 */
final class SlabProgress {
  private long bytes;
  private long counted;

  /** A new volume of {@code volumeBytes} input bytes, none counted yet. */
  void start(long volumeBytes) {
    bytes = volumeBytes;
    counted = 0;
  }

  /** The input bytes counted so far. */
  long counted() {
    return counted;
  }

  /** The input bytes not counted yet, now that the volume is done. */
  long finish() {
    return advance(1, 1);
  }

  /** The input bytes to add now that {@code done} of {@code total} output planes are done. */
  long advance(long done, long total) {
    long now = done >= total ? bytes : (long) (bytes * ((double) done / total));
    long more = now - counted;
    counted = now;
    return more;
  }
}
