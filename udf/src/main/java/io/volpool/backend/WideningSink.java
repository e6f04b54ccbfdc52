package io.volpool.backend;

import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A {@link VolumeSink} that takes a volume's stored bytes (any {@link ValueType}) and puts them into
 * the batch's sink as little-endian float32, widened and rescaled on the way, in chunks of
 * {@link #CHUNK} stored bytes: into the batch's own window where it has one (pinned memory on the
 * GPU backend), so each value is written once. Readers fill it as any sink (put, or windows of the
 * stored bytes); an element split between two calls waits for its other bytes (the record's length
 * was checked against its shape and dtype before, so none is left at the end). Owned by one reader (or
 * one batch) at a time, for one volume at a time: {@link #reusable()} and {@link #to} use one sink volume after
 * volume, so its buffers are allocated once and not per volume (768 KiB zeroed for each int16 volume cost the CPU
 * backend a third of its task time, 2026-12-06). Holds no native memory.
 */
public final class WideningSink implements VolumeSink {
  /** Stored bytes widened per step. */
  static final int CHUNK = 256 << 10;

  private VolumeSink dst;
  private ValueType type;
  private Rescale rescale;
  /** Stored bytes not yet widened; made by the first {@link #to} that needs it. */
  private ByteBuffer stored;
  /** Float32 values on their way into a sink that lends no window; made when first needed. */
  private ByteBuffer widened;
  private long position;

  private WideningSink() {}

  /**
   * The sink a reader of values of {@code type} writes to: {@code dst} itself for little-endian
   * float32 with no rescale (the bytes go in as they are), else a widening sink in front of it.
   */
  public static VolumeSink of(VolumeSink dst, ValueType type, Rescale rescale) {
    if (type.isFloat32() && rescale.isIdentity()) {
      return dst;
    }
    return new WideningSink().to(dst, type, rescale);
  }

  /** A sink for {@link #to}, to use again for each volume a reader or a batch takes (nothing allocated yet). */
  public static WideningSink reusable() {
    return new WideningSink();
  }

  /**
   * This sink, ready for the next volume (whatever it held of the last one is dropped) in front of {@code dst}; or
   * {@code dst} itself where the values need no widening, as {@link #of}.
   */
  public VolumeSink to(VolumeSink dst, ValueType type, Rescale rescale) {
    if (type.isFloat32() && rescale.isIdentity()) {
      return dst;
    }
    this.dst = dst;
    this.type = type;
    this.rescale = rescale;
    if (stored == null) {
      stored = ByteBuffer.allocate(CHUNK).order(ByteOrder.LITTLE_ENDIAN);
    }
    stored.clear();
    position = 0;
    return this;
  }

  @Override
  public void put(ByteBuffer src) {
    while (src.hasRemaining()) {
      int k = Math.min(src.remaining(), stored.remaining());
      ByteBuffer part = src.slice();
      part.limit(k);
      stored.put(part);
      src.position(src.position() + k);
      position += k;
      drain();
    }
  }

  @Override
  public void putFloat(float v) {
    if (!type.isFloat32() || stored.position() != 0) {
      throw new IllegalStateException("putFloat on a sink of " + type + " values");
    }
    position += Float.BYTES;
    dst.putFloat(rescale.isIdentity() ? v : v * rescale.slope() + rescale.intercept());
  }

  @Override
  public ByteBuffer window(int max) {
    ByteBuffer w = stored.slice();
    w.limit(Math.min(max, w.remaining()));
    return w;
  }

  @Override
  public void advance(int n) {
    stored.position(stored.position() + n);
    position += n;
    drain();
  }

  /** Widens the whole elements held into the batch's sink; an element cut short waits for its other bytes. */
  private void drain() {
    int whole = stored.position() / type.itemSize();
    if (whole == 0) {
      return;
    }
    stored.flip();
    for (int done = 0; done < whole; ) {
      int n = whole - done;
      ByteBuffer w = dst.window(n * Float.BYTES);
      int fit;
      if (w != null) {
        fit = w.remaining() / Float.BYTES;
        type.widen(stored, fit, w, rescale);
        dst.advance(fit * Float.BYTES);
      } else {
        int need = CHUNK / type.itemSize() * Float.BYTES;
        if (widened == null || widened.capacity() < need) {
          widened = ByteBuffer.allocate(need).order(ByteOrder.LITTLE_ENDIAN);
        }
        widened.clear();
        fit = Math.min(n, widened.capacity() / Float.BYTES);
        type.widen(stored, fit, widened, rescale);
        widened.flip();
        dst.put(widened);
      }
      done += fit;
    }
    stored.compact();
  }

  /** Stored bytes taken so far. */
  @Override
  public long position() {
    return position;
  }
}
