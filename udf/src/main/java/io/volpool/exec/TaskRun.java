package io.volpool.exec;

/**
 * The engine of one task as its partition function sees it: finished output, one piece at a time,
 * and the counts it measured. {@link BatchRunner} runs whole volumes in batches;
 * {@link SlabVolumes} runs volumes stored across rows in slabs.
 */
public interface TaskRun extends AutoCloseable {
  /** The next finished output (valid until the next call), or null at the end. */
  BatchRunner.Finished next();

  /** Input rows read (for volumes stored across rows, their rows). */
  long volumesIn();

  long bytesIn();

  long bytesOut();

  long batches();

  /** Called after each volume read (in the task's thread), so the task can report its progress as it goes. */
  void onRead(Runnable listener);

  /** Volumes run in slabs. */
  default long slabbedVolumes() {
    return 0;
  }

  @Override
  void close();
}
