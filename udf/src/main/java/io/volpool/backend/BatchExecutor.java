package io.volpool.backend;

import java.nio.ByteBuffer;

/**
 * Runs one pipeline on batches of same-shape volumes through a few buffer slots, so that filling
 * one slot can overlap the work on another. Protocol per slot: write little-endian float32 volumes
 * into {@link #input(int)}, {@link #submit(int, int)}, then read {@link #output(int)} (which waits
 * for the work). Owned and closed by the caller; not thread-safe (one task thread drives it).
 */
public interface BatchExecutor extends AutoCloseable {
  /** How many slots may be in flight at once (1 means no overlap). */
  int slots();

  /** The most volumes one slot takes. */
  int maxBatch();

  /** The slot's input buffer, cleared, little-endian, with room for {@link #maxBatch()} volumes. */
  ByteBuffer input(int slot);

  /** Starts the pipeline on the first {@code n} volumes written to the slot's input. */
  void submit(int slot, int n);

  /** Waits for the slot's work and returns its output: {@code n} volumes, little-endian, position 0. */
  ByteBuffer output(int slot);

  @Override
  void close();
}
