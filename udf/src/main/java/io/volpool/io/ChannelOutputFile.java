package io.volpool.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.PositionOutputStream;

/**
 * Where the Parquet writer writes: a local file through a {@link FileChannel} with a 1 MiB buffer
 * (no checksum sidecar, large writes), any other filesystem through Hadoop. The one place that
 * decides how output bytes reach storage, as {@link ByteSource} does for input.
 */
public final class ChannelOutputFile implements OutputFile {
  private final Path path;

  private ChannelOutputFile(Path path) {
    this.path = path;
  }

  /** The output file for {@code file}: a channel for {@code file:} paths, else Hadoop's. */
  public static OutputFile of(org.apache.hadoop.fs.Path file, Configuration conf) throws IOException {
    if ("file".equals(file.toUri().getScheme())) {
      return new ChannelOutputFile(Files2.local(file));
    }
    return HadoopOutputFile.fromPath(file, conf);
  }

  @Override
  public PositionOutputStream create(long blockSizeHint) throws IOException {
    Files.createDirectories(path.getParent());
    return new Stream(FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE));
  }

  @Override
  public PositionOutputStream createOrOverwrite(long blockSizeHint) throws IOException {
    Files.createDirectories(path.getParent());
    return new Stream(FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
        StandardOpenOption.WRITE));
  }

  @Override
  public boolean supportsBlockSize() {
    return false;
  }

  @Override
  public long defaultBlockSize() {
    return 0;
  }

  @Override
  public String getPath() {
    return path.toString();
  }

  /**
   * A buffered stream that is also a channel: a direct or mapped buffer (a batch's pinned output, a
   * slabbed volume's mapped output) goes to the file in one system call, with no copy through the
   * heap ({@link java.io.OutputStream#write(byte[])} costs two: into the array and, inside the JDK,
   * into a temporary direct buffer).
   */
  private static final class Stream extends PositionOutputStream implements WritableByteChannel {
    private final FileChannel ch;
    private final ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
    private long pos;

    Stream(FileChannel ch) {
      this.ch = ch;
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public void write(int b) throws IOException {
      if (!buf.hasRemaining()) {
        drain();
      }
      buf.put((byte) b);
      pos++;
    }

    /**
     * Copies {@code b} through the stream's buffer, 1 MiB at a time at most. A heap array handed to the
     * channel whole would be copied by the JDK into a temporary direct buffer of its size (allocated, zeroed
     * and faulted in when no cached one is as large, and kept per thread outside the memory budget).
     */
    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      int at = off;
      int left = len;
      while (left > 0) {
        if (!buf.hasRemaining()) {
          drain();
        }
        int n = Math.min(left, buf.remaining());
        buf.put(b, at, n);
        at += n;
        left -= n;
      }
      pos += len;
    }

    /** Writes all of {@code src} (the bytes buffered so far first); returns how many. */
    @Override
    public int write(ByteBuffer src) throws IOException {
      drain();
      int n = src.remaining();
      while (src.hasRemaining()) {
        ch.write(src);
      }
      pos += n;
      return n;
    }

    @Override
    public boolean isOpen() {
      return ch.isOpen();
    }

    private void drain() throws IOException {
      buf.flip();
      while (buf.hasRemaining()) {
        ch.write(buf);
      }
      buf.clear();
    }

    @Override
    public void flush() throws IOException {
      drain();
    }

    @Override
    public void close() throws IOException {
      try {
        drain();
      } finally {
        ch.close();
      }
    }
  }
}
