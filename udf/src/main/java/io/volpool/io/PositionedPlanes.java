package io.volpool.io;

import io.volpool.backend.PlaneSource;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The planes of a volume stored plainly in a file (little-endian float32, C order, from byte
 * {@code start}: an uncompressed PLAIN Parquet value, a C-order {@code <f4} .npy array), read by
 * position: a slab reads each channel's planes where they lie, so the volume is never copied whole.
 * On close the file is left positioned after the volume, as a reader that streamed it would leave it.
 */
public final class PositionedPlanes implements PlaneSource {
  private final ByteSource src;
  private final long start;
  private final VolumeShape shape;
  private final String record;
  private final ByteBuffer chunk;

  public PositionedPlanes(ByteSource src, long start, VolumeShape shape, String record) {
    this.src = src;
    this.start = start;
    this.shape = shape;
    this.record = record;
    this.chunk = ByteBuffer.wrap(src.chunk()).order(ByteOrder.LITTLE_ENDIAN);
  }

  @Override
  public String record() {
    return record;
  }

  @Override
  public VolumeShape shape() {
    return shape;
  }

  @Override
  public void read(int d0, int d1, java.nio.FloatBuffer dst, int at, int channelStride) {
    long hw = (long) shape.h() * shape.w();
    try {
      for (int c = 0; c < shape.c(); c++) {
        src.seek(start + (c * shape.plane() + d0 * hw) * Float.BYTES);
        int left = (int) ((d1 - d0) * hw);
        int off = c * channelStride + at;
        while (left > 0) {
          int n = Math.min(left, chunk.capacity() / Float.BYTES);
          chunk.clear().limit(n * Float.BYTES);
          src.readFully(chunk);
          chunk.flip();
          dst.put(off, chunk.asFloatBuffer(), 0, n);
          off += n;
          left -= n;
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading planes [" + d0 + ", " + d1 + ") of " + record + " from " + src.name() + ": "
          + e.getMessage(), e);
    }
  }

  @Override
  public boolean concurrentChannels() {
    return src.concurrentReads();
  }

  @Override
  public void readChannels(int c0, int c1, int d0, int d1, ByteBuffer dst, int at, int channelStride) {
    long hw = (long) shape.h() * shape.w();
    try {
      for (int c = c0; c < c1; c++) {
        int from = (c * channelStride + at) * Float.BYTES;
        src.readFullyAt(start + (c * shape.plane() + d0 * hw) * Float.BYTES,
            dst.slice(from, (int) ((d1 - d0) * hw * Float.BYTES)));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading planes [" + d0 + ", " + d1 + ") of channels [" + c0 + ", " + c1 + ") of "
          + record + " from " + src.name() + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void read(int d0, int d1, ByteBuffer dst, int at, int channelStride) {
    long hw = (long) shape.h() * shape.w();
    try {
      for (int c = 0; c < shape.c(); c++) {
        src.seek(start + (c * shape.plane() + d0 * hw) * Float.BYTES);
        int from = (c * channelStride + at) * Float.BYTES;
        // a direct (pinned) window is read into in place: the file's bytes land where the GPU copies from
        src.readFully(dst.slice(from, (int) ((d1 - d0) * hw * Float.BYTES)));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading planes [" + d0 + ", " + d1 + ") of " + record + " from " + src.name() + ": "
          + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    src.seek(start + shape.bytes());
  }
}
