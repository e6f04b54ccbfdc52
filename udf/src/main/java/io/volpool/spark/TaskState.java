package io.volpool.spark;

import io.volpool.backend.PhaseTimes;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What one task attempt measures, shared by its partition function (reading, the device) and its
 * output writer (encoding, writing, committing), which Spark runs in the same task thread but
 * creates separately. Found by task attempt id; removed when the task completes and its numbers
 * have gone into the job's accumulators.
 */
final class TaskState {
  private static final ConcurrentHashMap<Long, TaskState> BY_ATTEMPT = new ConcurrentHashMap<>();

  final PhaseTimes times = new PhaseTimes();
  final long started = System.nanoTime();
  /** Rows (Parquet) or volumes (.npy) written. */
  long volumesWritten;
  /** Output rows that start a volume: volumes written, also when a volume takes several rows. */
  long volumeStarts;
  long filesWritten;
  long peakHeap;

  static TaskState start(long attempt) {
    TaskState s = new TaskState();
    BY_ATTEMPT.put(attempt, s);
    return s;
  }

  /** The state of {@code attempt}, or a detached one when the writer runs without a partition runner. */
  static TaskState of(long attempt) {
    return BY_ATTEMPT.computeIfAbsent(attempt, a -> new TaskState());
  }

  static void end(long attempt) {
    BY_ATTEMPT.remove(attempt);
  }

  void sampleHeap() {
    Runtime r = Runtime.getRuntime();
    peakHeap = Math.max(peakHeap, r.totalMemory() - r.freeMemory());
  }
}
