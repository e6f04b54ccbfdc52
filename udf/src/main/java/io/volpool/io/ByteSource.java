package io.volpool.io;

import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Positioned reads of one input file, and the one place that decides how bytes reach memory: a
 * local file is read through a {@link FileChannel}, so a value lands in a pinned (direct) batch
 * buffer with a single copy by the kernel; other filesystems go through Hadoop's stream in 1 MiB
 * chunks. Owned by its reader; not thread-safe.
 */
public abstract class ByteSource implements Closeable {
  /** Chunk of copies through the heap: large enough for few calls, small enough to stay in cache. */
  static final int CHUNK = 1 << 20;

  protected long pos;
  private byte[] chunk;
  private Ahead ahead;
  private final String name;

  protected ByteSource(String name) {
    this.name = name;
  }

  /** Opens {@code file} for reading. */
  public static ByteSource open(Path file, Configuration conf) throws IOException {
    URI u = file.toUri();
    if (isLocal(file, conf)) {
      java.nio.file.Path p = Paths.get(u.getPath());
      return new Local(FileChannel.open(p, StandardOpenOption.READ), file.toString());
    }
    FileSystem fs = file.getFileSystem(conf);
    return new Hadoop(fs.open(file), fs.getFileStatus(file).getLen(), file.toString(), readsByPosition(fs));
  }

  /**
   * Whether reads by position of {@code fs}'s files may run on several threads at once, each a cheap
   * request of its own: HDFS's positioned reads (pread), which leave the stream alone. An object
   * store's (S3A) would each be a new ranged GET, serialized on the stream: not taken.
   */
  static boolean readsByPosition(FileSystem fs) {
    return "hdfs".equals(fs.getScheme());
  }

  /**
   * Whether {@code file}'s planes may be read by position, a slab window at a time on several threads:
   * a local file, or a file on HDFS.
   */
  public static boolean readsByPosition(Path file, Configuration conf) throws IOException {
    return isLocal(file, conf) || readsByPosition(file.getFileSystem(conf));
  }

  /** Whether {@code file} is on the local filesystem: read through a channel, by position from several threads. */
  private static boolean isLocal(Path file, Configuration conf) throws IOException {
    URI u = file.toUri();
    return "file".equals(u.getScheme()) || (u.getScheme() == null && FileSystem.get(conf).getScheme().equals("file"));
  }

  /** The file as the user named it. */
  public String name() {
    return name;
  }

  public long pos() {
    return pos;
  }

  public void seek(long p) {
    pos = p;
  }

  public abstract long length() throws IOException;

  /** Reads {@code len} bytes at the position into {@code b}, advancing. */
  public abstract void readFully(byte[] b, int off, int len) throws IOException;

  /** Reads {@code dst.remaining()} bytes at the position into {@code dst}, advancing both. */
  public void readFully(ByteBuffer dst) throws IOException {
    if (dst.hasArray()) {
      int n = dst.remaining();
      readFully(dst.array(), dst.arrayOffset() + dst.position(), n);
      dst.position(dst.position() + n);
      return;
    }
    byte[] c = chunk();
    while (dst.hasRemaining()) {
      int n = Math.min(c.length, dst.remaining());
      readFully(c, 0, n);
      dst.put(c, 0, n);
    }
  }

  /** Whether {@link #readFullyAt} may run on several threads at once (a local file's channel reads by position). */
  public boolean concurrentReads() {
    return false;
  }

  /**
   * Reads {@code dst.remaining()} bytes at absolute position {@code at} into {@code dst}, leaving
   * this source's position alone; safe on several threads at once where {@link #concurrentReads()}.
   */
  public void readFullyAt(long at, ByteBuffer dst) throws IOException {
    synchronized (this) {
      long p = pos;
      seek(at);
      try {
        readFully(dst);
      } finally {
        pos = p;
      }
    }
  }

  /** Whether {@link #map} maps the file's bytes (a local file). */
  public boolean mappable() {
    return false;
  }

  /**
   * The file's bytes {@code [at, at + len)} mapped read-only, so a reader can decode them in place
   * (a compressed page decompressed straight from the page cache, with no copy into a buffer first),
   * where {@link #mappable()}. The caller frees the mapping ({@code DirectBuffers.free}).
   */
  public java.nio.MappedByteBuffer map(long at, int len) throws IOException {
    throw new UnsupportedOperationException(name + " is not a local file: it cannot be mapped");
  }

  /** A reusable heap chunk of {@link #CHUNK} bytes (a multiple of 4: whole floats). */
  public byte[] chunk() {
    if (chunk == null) {
      chunk = new byte[CHUNK];
    }
    return chunk;
  }

  /**
   * An input stream from the position that reads ahead in a small buffer; {@link Ahead#consumed()}
   * says how far it got. One per source, reused: a call ends the use of the one before.
   */
  public Ahead ahead() {
    if (ahead == null) {
      ahead = new Ahead(this);
    }
    ahead.restart(pos);
    return ahead;
  }

  protected EOFException eof(long at, int len) throws IOException {
    return new EOFException(name + ": unexpected end of file reading " + len + " bytes at offset " + at + " (file is "
        + length() + " bytes; truncated or corrupt)");
  }

  /**
   * Reads ahead for a header of unknown length (Parquet page headers, .npy headers), then repositions.
   * The first read is small (a page header is tens of bytes, and the page's values follow it: a large
   * read would fetch them twice), later ones larger.
   */
  public static final class Ahead extends InputStream {
    static final int FIRST = 512;
    private final ByteSource src;
    private long start;
    private final byte[] buf = new byte[8192];
    private int len;
    private int at;
    private long filled;

    Ahead(ByteSource src) {
      this.src = src;
    }

    void restart(long from) {
      start = from;
      len = 0;
      at = 0;
      filled = 0;
    }

    private boolean refill() throws IOException {
      long left = src.length() - (start + filled);
      if (left <= 0) {
        return false;
      }
      int n = (int) Math.min(filled == 0 ? FIRST : buf.length, left);
      src.seek(start + filled);
      src.readFully(buf, 0, n);
      filled += n;
      len = n;
      at = 0;
      return true;
    }

    @Override
    public int read() throws IOException {
      if (at >= len && !refill()) {
        return -1;
      }
      return buf[at++] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int n) throws IOException {
      if (n == 0) {
        return 0;
      }
      if (at >= len && !refill()) {
        return -1;
      }
      int k = Math.min(n, len - at);
      System.arraycopy(buf, at, b, off, k);
      at += k;
      return k;
    }

    /** Bytes handed out so far. */
    public long consumed() {
      return filled - len + at;
    }

    /** Puts the source right after the bytes handed out. */
    public void finish() {
      src.seek(start + consumed());
    }
  }

  private static final class Local extends ByteSource {
    private final FileChannel ch;

    Local(FileChannel ch, String name) {
      super(name);
      this.ch = ch;
    }

    @Override
    public long length() throws IOException {
      return ch.size();
    }

    @Override
    public boolean concurrentReads() {
      return true;
    }

    @Override
    public boolean mappable() {
      return true;
    }

    @Override
    public java.nio.MappedByteBuffer map(long at, int len) throws IOException {
      if (at < 0 || at + len > ch.size()) {
        throw eof(at, len);
      }
      return ch.map(FileChannel.MapMode.READ_ONLY, at, len);
    }

    @Override
    public void readFullyAt(long at, ByteBuffer dst) throws IOException {
      if (!dst.isDirect()) {
        super.readFullyAt(at, dst);
        return;
      }
      int len = dst.remaining();
      long p = at;
      while (dst.hasRemaining()) {
        int n = ch.read(dst, p);
        if (n < 0) {
          throw eof(at, len);
        }
        p += n;
      }
    }

    @Override
    public void readFully(byte[] b, int off, int len) throws IOException {
      ByteBuffer bb = ByteBuffer.wrap(b, off, len);
      long at = pos;
      while (bb.hasRemaining()) {
        int n = ch.read(bb, pos);
        if (n < 0) {
          throw eof(at, len);
        }
        pos += n;
      }
    }

    @Override
    public void readFully(ByteBuffer dst) throws IOException {
      if (!dst.isDirect()) {
        // a heap buffer would make the JDK allocate a direct buffer of its size
        super.readFully(dst);
        return;
      }
      long at = pos;
      int len = dst.remaining();
      while (dst.hasRemaining()) {
        int n = ch.read(dst, pos);
        if (n < 0) {
          throw eof(at, len);
        }
        pos += n;
      }
    }

    @Override
    public void close() throws IOException {
      ch.close();
    }
  }

  private static final class Hadoop extends ByteSource {
    private final FSDataInputStream in;
    private final long length;
    /** Whether positioned reads go to the stream's own pread, on any thread (HDFS). */
    private final boolean pread;

    Hadoop(FSDataInputStream in, long length, String name, boolean pread) {
      super(name);
      this.in = in;
      this.length = length;
      this.pread = pread;
    }

    @Override
    public long length() {
      return length;
    }

    @Override
    public boolean concurrentReads() {
      return pread;
    }

    @Override
    public void readFullyAt(long at, ByteBuffer dst) throws IOException {
      if (!pread) {
        super.readFullyAt(at, dst);
        return;
      }
      int len = dst.remaining();
      if (at < 0 || at + len > length) {
        throw eof(at, len);
      }
      if (dst.hasArray()) {
        in.readFully(at, dst.array(), dst.arrayOffset() + dst.position(), len);
        dst.position(dst.position() + len);
      } else if (in.hasCapability(org.apache.hadoop.fs.StreamCapabilities.PREADBYTEBUFFER)) {
        // straight into the (pinned) window
        in.readFully(at, dst);
      } else {
        byte[] c = new byte[Math.min(len, CHUNK)];
        for (long p = at; dst.hasRemaining(); ) {
          int n = Math.min(c.length, dst.remaining());
          in.readFully(p, c, 0, n);
          dst.put(c, 0, n);
          p += n;
        }
      }
    }

    @Override
    public void readFully(byte[] b, int off, int len) throws IOException {
      if (pos + len > length) {
        throw eof(pos, len);
      }
      if (in.getPos() != pos) {
        in.seek(pos);
      }
      in.readFully(b, off, len);
      pos += len;
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }
}
