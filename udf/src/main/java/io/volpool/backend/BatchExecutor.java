package io.volpool.backend;

/**
 * Runs one pipeline on batches of same-shape volumes for one task. Batches draw their host buffers
 * from the backend's memory budget when they are made and give them back when closed, so the
 * budget admits batches, not tasks; device resources (GPU streams and device buffers) are held
 * only from {@link #submit} until the batch's output has been collected. Owned and closed by the
 * caller; driven by one task thread.
 */
public interface BatchExecutor extends AutoCloseable {
  /**
   * The value type its batches take in: little-endian float32 (readers widen and rescale), or the
   * volumes' stored type, which the executor widens itself (on the GPU, after the copy, so the host
   * and the bus move the stored bytes only; see {@link Batch#rescale}).
   */
  default io.volpool.format.ValueType stored() {
    return io.volpool.format.ValueType.FLOAT32;
  }

  /** The most volumes one batch takes. */
  int maxBatch();

  /** Host bytes one full batch holds (input, output and, on the CPU, intermediates). */
  long batchBytes();

  /**
   * A new empty batch.
   *
   * @param mayWait wait for room in the memory budget; else return null when there is none now
   * @throws io.volpool.memory.MemoryBudgetException when one batch can never fit the budget
   */
  Batch newBatch(boolean mayWait);

  /**
   * Starts the pipeline on the first {@code n} volumes written to {@code b}.
   *
   * @param mayWait wait for the device; else return false, starting nothing, when it is busy
   */
  boolean submit(Batch b, int n, boolean mayWait);

  @Override
  void close();
}
