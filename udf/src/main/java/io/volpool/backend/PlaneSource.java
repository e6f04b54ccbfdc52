package io.volpool.backend;

import io.volpool.op.VolumeShape;

/**
 * One volume, read forward along D: planes of every channel, in order, a range at a time. What a
 * slabbed run reads from (the rows of a volume stored across rows, or a volume spilled to local
 * disk), so a volume never has to be in memory whole.
 */
public interface PlaneSource extends AutoCloseable {
  /** The record's id or path, for errors and logs. */
  String record();

  /** The shape of the whole volume. */
  VolumeShape shape();

  /**
   * Reads planes {@code [d0, d1)} of every channel: plane {@code d} of channel {@code c} goes to
   * {@code dst[c * channelStride + at + (d - d0) * H * W]}. Calls go forward: {@code d0} is at least
   * the previous call's {@code d1} (planes in between, which no output reads, are skipped).
   */
  void read(int d0, int d1, float[] dst, int at, int channelStride);

  @Override
  void close();
}
