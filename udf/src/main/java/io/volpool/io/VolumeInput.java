package io.volpool.io;

/**
 * The volumes of one task's input, in order: Parquet splits or .npy files. Each {@link #next}
 * positions on the next volume and returns it; a reader that needs page memory its gate refuses
 * throws {@link PageGate.Refused} having consumed nothing, and the same call is made again later.
 * Owns open files and page memory; {@link #close()} releases them, also after a failure.
 */
public interface VolumeInput extends AutoCloseable {
  /** The next volume, or null at the end of the input. */
  VolumeSource next(PageGate gate);

  /** Volumes returned so far. */
  long volumes();

  /** The most volumes this input holds, when known before reading (Parquet rows from the footers); 0 when not. */
  default long volumesAtMost() {
    return 0;
  }

  /**
   * Whether {@link #next} may be called again after it threw {@link BadRecordException}, the bad record
   * (an .npy file whose header breaks a rule) stepped over; false when such a throw leaves the input
   * unusable (a Parquet file whose schema differs: its rows cannot be told apart).
   */
  default boolean stepsOverBadRecords() {
    return false;
  }

  @Override
  void close();
}
