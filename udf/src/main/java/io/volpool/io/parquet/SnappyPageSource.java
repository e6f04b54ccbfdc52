package io.volpool.io.parquet;

import io.volpool.io.ByteSource;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The decompressed bytes of one raw-Snappy Parquet page, decoded as they are read: a reader takes
 * a volume's bytes straight into its batch buffer, with no page-sized buffer of decompressed bytes
 * in between (decompressing a 24 MiB page into a buffer and copying each volume out of it
 * moved every byte through memory twice more than an uncompressed page).
 *
 * <p>Snappy's raw format (the one Parquet uses) is a length and a sequence of literals and copies
 * of earlier output. A copy may reach back past the start of the current read, into bytes already
 * handed out, so the source keeps the last {@link #HISTORY} bytes it produced. Every encoder that
 * compresses in Snappy's 64 KiB blocks (the C++ library that pyarrow, Arrow and parquet-java use
 * through snappy-java, and the Go and Rust ports) reaches no further; {@link #open} scans the
 * page's tags first and answers null for a page that does (legal, but then the reader decompresses
 * the page whole), so nothing is handed out from a stream that would fail half-way. The scan also
 * checks the page's structure and length, so a corrupt page is refused before any of it is read.
 * The compressed bytes come through a {@link Compressed} window: the whole page in one buffer, or a
 * local file's bytes mapped {@link Compressed#WINDOW} at a time, so a page of any size holds at most
 * that much of the file in the process (a 512 MiB page is not 512 MiB of resident mapping). Only
 * forward seeks. Owned by the page's reader, which closes it; not thread-safe.
 */
final class SnappyPageSource extends ByteSource {
  /** How far back a copy may reach: Snappy's block size. */
  static final int HISTORY = 1 << 16;

  private final Compressed in;
  private final long length;
  /** The next compressed byte to decode, from the page's first (after the length preamble). */
  private long inPos;
  private int literalLeft;
  private int copyLeft;
  private int copyOffset;
  /** The last bytes produced before the current read, oldest first: {@code [pos - histLen, pos)}. */
  private final byte[] hist = new byte[2 * HISTORY];
  private int histLen;
  private ByteBuffer discard;

  private SnappyPageSource(Compressed in, long start, long length, String name) {
    super(name);
    this.in = in;
    this.inPos = start;
    this.length = length;
  }

  /**
   * A page's compressed bytes, read through a window: {@link #at} makes a range readable and says
   * where it lies in {@link #buf}. A page in a buffer is one window; a local file's page is mapped a
   * window at a time, the last one freed when the next is mapped and on {@link #close()}.
   */
  static final class Compressed implements AutoCloseable {
    /**
     * The most of a local file's page mapped at once: a whole page up to this size (the pages of
     * Spark's and pyarrow's writers are 1-24 MiB), windows of it beyond (a 512 MiB volume in one
     * row). Not smaller: with windows of 8 MiB sixteen task threads spent 0.97-1.02 task-s per GB
     * reading incompressible snappy on the H200, against 0.51-0.55 with one mapping per 24 MiB page
     * (docs/benchmarks.md, 2026-12-02); every map and unmap stops the other threads' page faults.
     */
    static final int WINDOW = 64 << 20;
    private final ByteSource file;
    private final long fileAt;
    private final int window;
    final long length;
    ByteBuffer buf;
    private long base;
    private int origin;
    private int span;

    private Compressed(ByteSource file, long fileAt, long length, ByteBuffer buf, int window) {
      this.file = file;
      this.fileAt = fileAt;
      this.window = window;
      this.length = length;
      this.buf = buf;
      this.origin = buf == null ? 0 : buf.position();
      this.span = buf == null ? 0 : buf.remaining();
    }

    /** The compressed bytes from {@code b}'s position to its limit. */
    static Compressed of(ByteBuffer b) {
      return new Compressed(null, 0, b.remaining(), b, 0);
    }

    /** {@code length} bytes of {@code file} from {@code at}, mapped a window at a time ({@link ByteSource#map}). */
    static Compressed mapped(ByteSource file, long at, long length) {
      return mapped(file, at, length, WINDOW);
    }

    /** As {@link #mapped(ByteSource, long, long)}, with windows of {@code window} bytes (tests: windows of a few bytes). */
    static Compressed mapped(ByteSource file, long at, long length, int window) {
      return new Compressed(file, at, length, null, window);
    }

    /** Makes {@code [pos, pos + n)} readable (within the page) and returns where {@code pos} lies in {@link #buf}. */
    int at(long pos, int n) throws IOException {
      if (buf == null || pos < base || pos + n > base + span) {
        if (file == null) {
          throw new IllegalStateException("bytes " + pos + "-" + (pos + n) + " outside the page's " + length);
        }
        io.volpool.memory.DirectBuffers.free(buf);
        buf = null;
        span = (int) Math.min(Math.max(window, n), length - pos);
        buf = file.map(fileAt + pos, span);
        base = pos;
        origin = 0;
      }
      return origin + (int) (pos - base);
    }

    /** How many bytes from {@code pos} the current window holds (after {@link #at}). */
    int held(long pos) {
      return (int) (base + span - pos);
    }

    @Override
    public void close() {
      if (file != null) {
        io.volpool.memory.DirectBuffers.free(buf);
        buf = null;
      }
    }
  }

  /**
   * A source over the compressed page in {@code in} (position to limit), which must decompress to
   * {@code uncompressed} bytes; null when the page is valid but has a copy reaching back further
   * than {@link #HISTORY}.
   *
   * @throws IllegalArgumentException naming what is wrong, for a page that is not valid Snappy of that length
   */
  static SnappyPageSource open(Compressed in, long uncompressed, String name) throws IOException {
    long p = 0;
    long end = in.length;
    long declared = 0;
    int shift = 0;
    while (true) {
      if (p >= end || shift > 28) {
        throw new IllegalArgumentException("truncated or oversized length preamble");
      }
      int at = in.at(p, 1);
      int b = in.buf.get(at) & 0xff;
      p++;
      declared |= (long) (b & 0x7f) << shift;
      shift += 7;
      if (b < 0x80) {
        break;
      }
    }
    if (declared != uncompressed) {
      throw new IllegalArgumentException("Snappy length " + declared + " where the page header says " + uncompressed);
    }
    // the tags, read by the decoder's own parser (which refuses a truncated tag or a literal past the
    // end), with the literals stepped over: the copies' offsets and the length are checked here
    SnappyPageSource s = new SnappyPageSource(in, p, uncompressed, name);
    long produced = 0;
    boolean far = false;
    while (s.inPos < end) {
      s.nextTag();
      if (s.literalLeft > 0) {
        produced += s.literalLeft;
        s.inPos += s.literalLeft;
        s.literalLeft = 0;
      } else {
        if (s.copyOffset <= 0 || s.copyOffset > produced) {
          throw new IllegalArgumentException("a copy from offset " + Integer.toUnsignedString(s.copyOffset)
              + " at output byte " + produced + " reaches before the page's start");
        }
        far |= s.copyOffset > HISTORY;
        produced += s.copyLeft;
        s.copyLeft = 0;
      }
      if (produced > uncompressed) {
        throw new IllegalArgumentException("decompresses past the " + uncompressed + " bytes the page header says");
      }
    }
    if (produced != uncompressed) {
      throw new IllegalArgumentException("decompresses to " + produced + " bytes where the page header says "
          + uncompressed);
    }
    s.inPos = p;
    return far ? null : s;
  }

  @Override
  public long length() {
    return length;
  }

  /** Moves forward to {@code p}, decoding the bytes in between; never back. */
  @Override
  public void seek(long p) {
    if (p < pos) {
      throw new IllegalStateException(name() + ": a compressed page is read forward only (at " + pos + ", asked for "
          + p + ")");
    }
    if (discard == null) {
      discard = ByteBuffer.allocate(HISTORY);
    }
    try {
      while (pos < p) {
        int n = (int) Math.min(p - pos, discard.capacity());
        readFully(discard.clear().limit(n));
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Override
  public void readFully(byte[] b, int off, int len) throws IOException {
    readFully(ByteBuffer.wrap(b, off, len));
  }

  @Override
  public void readFully(ByteBuffer dst) throws IOException {
    int n = dst.remaining();
    if (pos + n > length) {
      throw new EOFException(name() + ": reading " + n + " bytes at " + pos + " of a page that decompresses to "
          + length + " bytes");
    }
    int base = dst.position();
    int w = 0;
    try {
      while (w < n) {
        if (literalLeft > 0) {
          int k = Math.min(literalLeft, n - w);
          int i = in.at(inPos, 1);
          // the word-wise copy moves longs from the page to dst: only where both have one byte order, or
          // the bytes turn around (a GPU batch's pinned window is little-endian, a page's buffer big-endian)
          if (k <= 16 && n - w >= 16 && in.held(inPos) >= 16 && dst.order() == in.buf.order()) {
            // a short literal (a few bytes between copies): two words, not a bulk copy's set-up
            dst.putLong(base + w, in.buf.getLong(i));
            dst.putLong(base + w + 8, in.buf.getLong(i + 8));
          } else {
            k = Math.min(k, in.held(inPos));
            dst.put(base + w, in.buf, i, k);
          }
          inPos += k;
          literalLeft -= k;
          w += k;
        } else if (copyLeft > 0 && copyOffset <= w && n - w >= copyLeft + 8) {
          w = shortCopy(dst, base + w, copyOffset, copyLeft) - base;
          copyLeft = 0;
        } else if (copyLeft > 0) {
          w = copy(dst, base, w, n);
        } else {
          nextTag();
        }
      }
    } catch (InternalError e) {
      // the JDK's answer to a fault on a mapped page: the file was truncated while it was read
      throw new IOException(name() + ": the file changed while it was read (" + e.getMessage() + ")", e);
    }
    dst.position(base + n);
    remember(dst, base, n);
    pos += n;
  }

  /**
   * Reads the tag at {@link #inPos} and the bytes after it: starts a literal ({@link #literalLeft})
   * or a copy ({@link #copyLeft} from {@link #copyOffset} back) and moves past them. The one parser of
   * tags, for {@link #open}'s scan and the decoding alike.
   *
   * @throws IllegalArgumentException for a tag cut off by the page's end or a literal running past it
   */
  private void nextTag() throws IOException {
    long left = in.length - inPos;
    int i = in.at(inPos, (int) Math.min(5, left));
    ByteBuffer w = in.buf;
    int t = w.get(i) & 0xff;
    int kind = t & 3;
    int extra = kind == 0 ? Math.max(0, (t >>> 2) - 59) : kind == 3 ? 4 : kind;
    if (extra >= left) {
      throw new IllegalArgumentException("truncated " + (kind == 0 ? "literal length" : "copy") + " at byte " + inPos);
    }
    inPos += 1 + extra;
    switch (kind) {
      case 0: {
        long len = (t >>> 2) + 1;
        if (extra > 0) {
          long v = 0;
          for (int k = 0; k < extra; k++) {
            v |= (long) (w.get(i + 1 + k) & 0xff) << (8 * k);
          }
          len = v + 1;
        }
        if (len > in.length - inPos) {
          throw new IllegalArgumentException("a literal of " + len + " bytes runs past the page's end");
        }
        literalLeft = (int) len;
        break;
      }
      case 1:
        copyLeft = ((t >>> 2) & 7) + 4;
        copyOffset = (t >>> 5) << 8 | (w.get(i + 1) & 0xff);
        break;
      case 2:
        copyLeft = (t >>> 2) + 1;
        copyOffset = (w.get(i + 1) & 0xff) | (w.get(i + 2) & 0xff) << 8;
        break;
      default:
        copyLeft = (t >>> 2) + 1;
        copyOffset = (w.get(i + 1) & 0xff) | (w.get(i + 2) & 0xff) << 8 | (w.get(i + 3) & 0xff) << 16
            | (w.get(i + 4) & 0xff) << 24;
        break;
    }
  }

  /**
   * A whole copy (at most 64 bytes, Snappy's longest) whose source lies in this read and which
   * leaves at least 8 bytes of room after it: word by word when the source is a word or more back
   * (the 8 bytes written past its end are overwritten by what follows), byte by byte when it repeats
   * a shorter pattern. Returns the index after it.
   */
  private static int shortCopy(ByteBuffer dst, int d, int offset, int len) {
    int end = d + len;
    int s = d - offset;
    // a pattern shorter than a word (a run of zeros is one of 4 bytes): each word written holds
    // d - s right bytes, so the pattern doubles until it is a word long (as Snappy's C++ does)
    while (d - s < 8 && d < end) {
      dst.putLong(d, dst.getLong(s));
      d += d - s;
    }
    while (d < end) {
      dst.putLong(d, dst.getLong(s));
      d += 8;
      s += 8;
    }
    return end;
  }

  /**
   * Copies as much of the current copy as fits, in pieces no longer than its offset (so a piece
   * never reads bytes it writes), each from this read's output or from the history before it.
   */
  private int copy(ByteBuffer dst, int base, int w, int n) {
    while (copyLeft > 0 && w < n) {
      int piece = Math.min(Math.min(copyLeft, copyOffset), n - w);
      int back = copyOffset - w;
      if (back > 0) {
        // starts in the history: bytes [histLen - back, ...)
        piece = Math.min(piece, back);
        dst.put(base + w, hist, histLen - back, piece);
      } else {
        dst.put(base + w, dst, base + w - copyOffset, piece);
      }
      w += piece;
      copyLeft -= piece;
    }
    return w;
  }

  /** Keeps the last {@link #HISTORY} bytes produced, for copies in later reads. */
  private void remember(ByteBuffer dst, int base, int n) {
    if (n >= HISTORY) {
      dst.get(base + n - HISTORY, hist, 0, HISTORY);
      histLen = HISTORY;
      return;
    }
    if (histLen + n > hist.length) {
      System.arraycopy(hist, histLen - HISTORY, hist, 0, HISTORY);
      histLen = HISTORY;
    }
    dst.get(base, hist, histLen, n);
    histLen += n;
  }

  /** Frees the window of a mapped page. */
  @Override
  public void close() {
    in.close();
  }
}
