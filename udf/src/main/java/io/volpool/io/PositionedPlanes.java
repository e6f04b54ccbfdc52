package io.volpool.io;

import io.volpool.backend.PlaneSource;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The planes of a volume stored plainly in a file (C order, from byte {@code start}: an uncompressed
 * PLAIN Parquet value, a C-order .npy array), read by position: a slab reads each channel's planes
 * where they lie, so the volume is never copied whole. Little-endian float32 lands in the slab's
 * window as it is; other stored types (int16, float16, big-endian...) are read a chunk at a time and
 * widened (and rescaled) on the way, exactly as a streamed read widens them. Counts the stored bytes
 * it reads. On close the file is left positioned after the volume, as a reader that streamed it would
 * leave it.
 */
public final class PositionedPlanes implements PlaneSource {
  private final ByteSource src;
  private final long start;
  private final VolumeShape shape;
  private final String record;
  private final ByteBuffer chunk;
  private final io.volpool.format.ValueType type;
  private final io.volpool.format.Rescale rescale;
  /** Whether the stored values are what the slab takes (little-endian float32, no rescale): read in place. */
  private final boolean plain;
  /** Widened values of one chunk, for reads into a float buffer (made on the first such read of a narrow type). */
  private ByteBuffer wide;
  private final java.util.concurrent.atomic.AtomicLong storedRead = new java.util.concurrent.atomic.AtomicLong();

  /** A volume of little-endian float32. */
  public PositionedPlanes(ByteSource src, long start, VolumeShape shape, String record) {
    this(src, start, shape, record, io.volpool.format.ValueType.FLOAT32, io.volpool.format.Rescale.IDENTITY);
  }

  /** A volume of values of {@code type}, each widened to float32 and rescaled by {@code rescale} as it is read. */
  public PositionedPlanes(ByteSource src, long start, VolumeShape shape, String record, io.volpool.format.ValueType type,
      io.volpool.format.Rescale rescale) {
    this.src = src;
    this.start = start;
    this.shape = shape;
    this.record = record;
    this.type = type;
    this.rescale = rescale;
    this.plain = type.isFloat32() && rescale.isIdentity();
    this.chunk = ByteBuffer.wrap(src.chunk()).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** The stored bytes read so far (planes two slabs share are read once; planes no output reads are not read). */
  public long storedBytesRead() {
    return storedRead.get();
  }

  /** Byte offset in the file of plane {@code d} of channel {@code c}. */
  private long at(int c, int d) {
    return start + (c * shape.plane() + (long) d * shape.h() * shape.w()) * type.itemSize();
  }

  /**
   * Reads {@code n} values from the file's position on, widened, into {@code dst} from byte {@code to}
   * on, through {@code buf} (a chunk of this thread's).
   */
  private void widened(long n, ByteBuffer dst, int to, ByteBuffer buf) throws IOException {
    int per = buf.capacity() / type.itemSize();
    ByteBuffer d = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    while (n > 0) {
      int m = (int) Math.min(n, per);
      buf.clear().limit(m * type.itemSize());
      src.readFully(buf);
      buf.flip();
      d.limit(to + m * Float.BYTES).position(to);
      type.widen(buf, m, d, rescale);
      to += m * Float.BYTES;
      n -= m;
    }
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
        src.seek(at(c, d0));
        int left = (int) ((d1 - d0) * hw);
        int off = c * channelStride + at;
        int per = chunk.capacity() / type.itemSize();
        while (left > 0) {
          int n = Math.min(left, per);
          chunk.clear().limit(n * type.itemSize());
          src.readFully(chunk);
          chunk.flip();
          if (plain) {
            dst.put(off, chunk.asFloatBuffer(), 0, n);
          } else {
            if (wide == null) {
              wide = ByteBuffer.allocate(per * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            }
            wide.clear();
            type.widen(chunk, n, wide, rescale);
            dst.put(off, wide.flip().asFloatBuffer(), 0, n);
          }
          off += n;
          left -= n;
        }
        storedRead.addAndGet((d1 - d0) * hw * type.itemSize());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading planes [" + d0 + ", " + d1 + ") of " + record + " from " + src.name() + ": "
          + e.getMessage(), e);
    }
  }

  @Override
  public boolean concurrentChannels() {
    return plain && src.concurrentReads();
  }

  @Override
  public void readChannels(int c0, int c1, int d0, int d1, ByteBuffer dst, int at, int channelStride) {
    if (!plain) {
      throw new UnsupportedOperationException(record + ": " + type + " values are widened as they are read, by one"
          + " thread (concurrentChannels() is false)");
    }
    long hw = (long) shape.h() * shape.w();
    try {
      for (int c = c0; c < c1; c++) {
        int from = (c * channelStride + at) * Float.BYTES;
        src.readFullyAt(at(c, d0), dst.slice(from, (int) ((d1 - d0) * hw * Float.BYTES)));
        storedRead.addAndGet((d1 - d0) * hw * Float.BYTES);
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
        src.seek(at(c, d0));
        int from = (c * channelStride + at) * Float.BYTES;
        if (plain) {
          // a direct (pinned) window is read into in place: the file's bytes land where the GPU copies from
          src.readFully(dst.slice(from, (int) ((d1 - d0) * hw * Float.BYTES)));
        } else {
          widened((d1 - d0) * hw, dst, from, chunk);
        }
        storedRead.addAndGet((d1 - d0) * hw * type.itemSize());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading planes [" + d0 + ", " + d1 + ") of " + record + " from " + src.name() + ": "
          + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    src.seek(start + shape.numel() * type.itemSize());
  }
}
