package io.volpool.io;

import io.volpool.backend.VolumeSink;
import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
import io.volpool.op.VolumeShape;

/**
 * One input volume, positioned for reading: its record name, its shape and a way to put its values
 * into a batch as little-endian float32, widened from the dtype they are stored in (or as stored,
 * for a batch that widens them itself). What the writer needs of the record afterwards (its
 * pass-through columns, its file) stays with it; its tensor bytes do not. Checks are made before
 * any byte is written to the batch, and a broken rule throws {@link BadRecordException} naming the record.
 */
public interface VolumeSource {
  /** The record's id or path, for errors and logs. */
  String record();

  VolumeShape shape();

  /** The bytes the volume's values take where they are stored, at their dtype's width: what a summary counts as read. */
  default long storedBytes() {
    return shape().bytes();
  }

  /** Writes the volume's {@code shape().bytes()} bytes of float32 to {@code dst} (widened from its dtype). Called once. */
  void copyTo(VolumeSink dst);

  /**
   * How {@link #copyStoredTo} hands the values over: their dtype and byte order as stored (known
   * after {@link #shape()}). Little-endian float32 for volumes that can only come widened.
   */
  default ValueType valueType() {
    return ValueType.FLOAT32;
  }

  /**
   * The dtype the volume's values were stored as, for provenance: {@link #valueType()}, except for a
   * Parquet list of int8 to int16, which Parquet keeps as 4-byte INT32 (read as such) but names int16.
   */
  default ValueType storedDtype() {
    return valueType();
  }

  /** The rescale {@link #copyTo} applies (from settings or the row's columns; known after {@link #shape()}). */
  default Rescale rescale() {
    return Rescale.IDENTITY;
  }

  /**
   * Writes the volume's {@link #storedBytes()} bytes as stored ({@link #valueType()}, not rescaled)
   * to {@code dst}, for a batch that widens them itself (on the GPU, in device memory). Called once,
   * instead of {@link #copyTo}.
   */
  default void copyStoredTo(VolumeSink dst) {
    if (!valueType().isFloat32() || !rescale().isIdentity()) {
      throw new UnsupportedOperationException(record() + ": no stored copy of " + valueType() + " values");
    }
    copyTo(dst);
  }

  /**
   * The volume's planes read by position where it lies in its file, when it is stored plainly (an
   * uncompressed little-endian float32 Parquet value; a C-order .npy of any dtype, widened as it is
   * read); else null. Used instead of {@link #copyTo}
   * (once), to run a volume in slabs without copying it whole; close it before the next volume.
   */
  default io.volpool.backend.PlaneSource positionedPlanes() {
    return null;
  }

  /** The path of the file holding the record, for a quarantined record's line; null when unknown. */
  default String filePath() {
    return null;
  }

  /** The record's row in {@link #filePath()}, counted from 0; -1 for a whole file or when unknown. */
  default long rowInFile() {
    return -1;
  }

  /** The folder, relative to the input root, whose output file this volume goes to ("" for the root). */
  default String outputFolder() {
    return "";
  }

  /** The row's other columns, which Parquet output carries through; null when there are none (.npy input). */
  default org.apache.parquet.example.data.Group passThrough() {
    return null;
  }

  /** The id the output records for a volume without pass-through columns: its record. */
  default String outputId() {
    return record();
  }

  /**
   * Where this volume lies in an input file holding a batch of volumes, which an output mirroring the
   * input's files repeats (the output file, and the volume's index in it); null for other inputs.
   */
  default FilePlace filePlace() {
    return null;
  }

  /**
   * Volume {@code index} of the {@code count} volumes of the input file {@code path} ({@code relative} below the
   * input root), whose batch dimensions before {@code [C, D, H, W]} are {@code leading} (none for one volume).
   * Plain values: a writer needs no reader's types.
   */
  record FilePlace(String path, String relative, long[] leading, int count, int index) {}
}
