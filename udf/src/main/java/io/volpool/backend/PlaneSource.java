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
   * {@code dst} at index {@code c * channelStride + at + (d - d0) * H * W} (absolute indices; a heap
   * window on the CPU, pinned memory on the GPU). Calls go forward: {@code d0} is at least the
   * previous call's {@code d1} (planes in between, which no output reads, are skipped).
   */
  void read(int d0, int d1, java.nio.FloatBuffer dst, int at, int channelStride);

  /**
   * {@link #read(int, int, java.nio.FloatBuffer, int, int)} into little-endian bytes (a pinned window
   * on the GPU), float index {@code i} at byte {@code 4 i}: sources that read a file by position
   * override it to read straight into {@code dst}, with no copy on the way.
   */
  default void read(int d0, int d1, java.nio.ByteBuffer dst, int at, int channelStride) {
    read(d0, d1, dst.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN).asFloatBuffer(), at, channelStride);
  }

  /**
   * Whether {@link #readChannels} may run for disjoint channel ranges on several threads at once
   * (a local file read by position): then a slab window is read by several threads.
   */
  default boolean concurrentChannels() {
    return false;
  }

  /**
   * {@link #read(int, int, java.nio.ByteBuffer, int, int)} for channels {@code [c0, c1)} only; for
   * sources whose {@link #concurrentChannels()} is true.
   */
  default void readChannels(int c0, int c1, int d0, int d1, java.nio.ByteBuffer dst, int at, int channelStride) {
    throw new UnsupportedOperationException(record() + ": this source reads every channel at once");
  }

  @Override
  void close();
}
