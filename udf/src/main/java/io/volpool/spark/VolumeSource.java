package io.volpool.spark;

import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;

/**
 * One input volume waiting to be batched: its record name, its shape and a way to copy its
 * little-endian float32 bytes into a batch buffer. Implementations validate lazily and throw
 * {@link BadRecordException} naming the record.
 */
public interface VolumeSource {
  /** The record's id or path, for errors and logs. */
  String record();

  VolumeShape shape();

  /** Copies the volume's {@code shape().bytes()} bytes to {@code dst} at its position. */
  void copyTo(ByteBuffer dst);
}
