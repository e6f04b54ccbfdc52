package io.volpool.io;

import io.volpool.backend.PlaneSource;

/**
 * Where a task's {@link SlabbedVolume}s are read from, one volume at a time in plan order, and what
 * it measured: volumes (or rows) read and their stored bytes.
 */
public interface SlabbedInput<E extends SlabbedVolume> extends AutoCloseable {
  /** The record whose id, pass-through columns and stored dtype the output of {@code v} carries. Call between volumes. */
  VolumeSource first(E v);

  /** Host bytes this input holds while {@code v} is read (rows in memory), which the slabs' share leaves aside. */
  long heldBytes(E v);

  /** {@code v}'s planes, read forward along D. Close it to give back what it holds. */
  PlaneSource open(E v);

  /** After the last slab: reads what no output plane needed but the count must see (the rest of a volume's rows). */
  void finish(PlaneSource src);

  /** The units read so far (rows for volumes across rows, volumes for .npy), each counted once over the task. */
  long unitsRead();

  /** Stored bytes read so far, at their stored width; read by any thread. */
  long storedBytesRead();

  @Override
  void close();
}
