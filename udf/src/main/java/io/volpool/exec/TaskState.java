package io.volpool.exec;

import io.volpool.backend.PhaseTimes;

/**
 * What one task measures: its phase times and what its output writer wrote. Made by the task's
 * partition function, travels with every {@link BatchRunner.Finished} the engine hands out, so the
 * output writer (which Spark creates apart from the partition function, in the same task thread) adds
 * its own times and counts to the same object; the partition function reports it when the task ends.
 * Used by one task thread.
 */
public final class TaskState {
  private final PhaseTimes times = new PhaseTimes();
  private final long started = System.nanoTime();
  private long volumesWritten;
  private long volumeStarts;
  private long filesWritten;
  private long peakHeap;
  private final java.util.TreeSet<String> inputDtypes = new java.util.TreeSet<>();
  private final java.util.List<io.volpool.io.QuarantinedRecord> quarantined = new java.util.ArrayList<>();

  /** Sets bad record {@code r} aside: the task goes on without it, and its output writer commits it with the task. */
  public void quarantine(io.volpool.io.QuarantinedRecord r) {
    quarantined.add(r);
  }

  /** The bad records the task set aside, in the order it met them. */
  public java.util.List<io.volpool.io.QuarantinedRecord> quarantined() {
    return java.util.Collections.unmodifiableList(quarantined);
  }

  /** Notes that the task read a volume (or a volume's rows) stored as {@code t}. */
  public void read(io.volpool.format.ValueType t) {
    inputDtypes.add(t.toString());
  }

  /** The stored dtypes of the volumes the task read, sorted (numpy names; big-endian as {@code >i2}). */
  public java.util.SortedSet<String> inputDtypes() {
    return java.util.Collections.unmodifiableSortedSet(inputDtypes);
  }

  public PhaseTimes times() {
    return times;
  }

  /** {@link System#nanoTime()} when the task started. */
  public long started() {
    return started;
  }

  /**
   * Adds what one output file held.
   *
   * @param rows rows (Parquet) or volumes (.npy) written
   * @param starts output rows that start a volume: volumes, also when a volume takes several rows
   */
  public void wrote(long rows, long starts, long files) {
    volumesWritten += rows;
    volumeStarts += starts;
    filesWritten += files;
  }

  public long volumesWritten() {
    return volumesWritten;
  }

  public long volumeStarts() {
    return volumeStarts;
  }

  public long filesWritten() {
    return filesWritten;
  }

  public long peakHeap() {
    return peakHeap;
  }

  public void sampleHeap() {
    Runtime r = Runtime.getRuntime();
    peakHeap = Math.max(peakHeap, r.totalMemory() - r.freeMemory());
  }
}
