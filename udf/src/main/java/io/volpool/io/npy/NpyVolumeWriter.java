package io.volpool.io.npy;

import io.volpool.format.Dtype;
import io.volpool.io.BadRecordException;
import io.volpool.io.ChannelOutputFile;
import io.volpool.io.VolumeSource;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.format.Npy;
import io.volpool.op.VolumeShape;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.Callable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Writes volumes that arrive as rows of whole planes (volumes stored across rows, run in slabs) as
 * one {@code .npy} each, named by the volume's id. A {@code .npy} holds each channel's planes
 * together ({@code [C, D, H, W]} in C order) while rows bring every channel's planes of a D range,
 * so each row's channels go by position into a local scratch file of the volume's size (the
 * executor's local directories); when its last plane is in, the file is streamed to the output's
 * filesystem (any Hadoop filesystem: no positional writes needed there) and deleted. Memory holds
 * no volume; the output may be of any size. Owned by the task's output writer; counts files.
 */
public final class NpyVolumeWriter implements AutoCloseable {
  private final Path root;
  private final Configuration conf;
  private final PhaseTimes times;
  private final Callable<File> scratch;
  private File file;
  private FileChannel ch;
  private String id;
  private String record;
  private VolumeShape shape;
  private long header;
  private int next;
  private long files;

  /**
   * @param root the task's work folder; outputs go to {@code root/<id>.npy}
   * @param scratch makes an empty local file for one volume's bytes
   */
  public NpyVolumeWriter(Path root, Configuration conf, PhaseTimes times, Callable<File> scratch) {
    this.root = root;
    this.conf = conf;
    this.times = times;
    this.scratch = scratch;
  }

  /** Volumes (files) completed so far. */
  public long files() {
    return files;
  }

  /**
   * Writes output planes {@code [d0, d1)} of every channel of the volume of {@code item}, laid out
   * {@code [C, d1 - d0, H, W]} in {@code out} from byte {@code offset}. A volume's rows come in plane
   * order, from plane 0 to its last.
   */
  public void write(VolumeSource item, VolumeShape outShape, Dtype dtype, ByteBuffer out, long offset, int d0, int d1)
      throws IOException {
    long t0 = System.nanoTime();
    if (d0 == 0) {
      if (ch != null) {
        throw new IllegalStateException("output of " + record + " ended at plane " + next + " of " + shape.d());
      }
      open(item, outShape, dtype);
    } else if (ch == null || d0 != next || !item.outputId().equals(id)) {
      throw new IllegalStateException("output planes [" + d0 + ", " + d1 + ") of " + item.record() + " arrived out of"
          + " order (expected plane " + next + (record == null ? " 0 of a new volume" : " of " + record) + ")");
    }
    long planeBytes = (long) shape.h() * shape.w() * dtype.itemSize();
    int n = d1 - d0;
    for (int c = 0; c < shape.c(); c++) {
      ByteBuffer part = out.slice((int) (offset + c * n * planeBytes), (int) (n * planeBytes));
      long at = header + ((long) c * shape.d() + d0) * planeBytes;
      while (part.hasRemaining()) {
        at += ch.write(part, at);
      }
    }
    next = d1;
    times.add(Phase.WRITE, System.nanoTime() - t0);
    if (next == shape.d()) {
      finish();
    }
  }

  /** The file name of a volume's output: its id and {@code .npy}; an id that cannot name a file is refused. */
  public static String fileName(String id, String record) {
    if (id.isEmpty() || id.equals(".") || id.equals("..") || id.startsWith(".") || id.contains("/")
        || id.contains("\\") || id.chars().anyMatch(ch -> ch < 0x20 || ch == 0x7f)) {
      throw new BadRecordException(record, "its id cannot name an output .npy file (it must be non-empty, not start"
          + " with '.', and hold no '/', '\\\\' or control characters); write Parquet output instead");
    }
    // an id that names a .npy file already (a .npy input's, written across rows) keeps its name
    return id.endsWith(".npy") ? id : id + ".npy";
  }

  private void open(VolumeSource item, VolumeShape outShape, Dtype dtype) throws IOException {
    id = item.outputId();
    record = item.record();
    fileName(id, record);
    shape = outShape;
    byte[] h = Npy.header(new long[] {outShape.c(), outShape.d(), outShape.h(), outShape.w()}, dtype);
    header = h.length;
    try {
      file = scratch.call();
    } catch (Exception e) {
      throw new IOException("creating a local scratch file for the .npy output of " + record + ": " + e.getMessage(), e);
    }
    ch = FileChannel.open(file.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.READ);
    ByteBuffer hb = ByteBuffer.wrap(h);
    long at = 0;
    while (hb.hasRemaining()) {
      at += ch.write(hb, at);
    }
    next = 0;
  }

  /** Streams the complete scratch file to {@code root/<id>.npy} and deletes it. */
  private void finish() throws IOException {
    long t0 = System.nanoTime();
    ch.close();
    ch = null;
    // a relative path is never parsed on its own as a URI: a name may hold ':'
    Path target = new Path(root.toString() + "/" + fileName(id, record));
    try (InputStream in = Files.newInputStream(file.toPath()); OutputStream os = ChannelOutputFile.of(target, conf).create(0)) {
      in.transferTo(os);
    } catch (java.nio.file.FileAlreadyExistsException | org.apache.hadoop.fs.FileAlreadyExistsException e) {
      throw new BadRecordException(record, "its output file " + fileName(id, record) + " is written by another record"
          + " already: each id names one .npy file (an id and the same id with .npy name the same one), so ids must be"
          + " unique; give each volume its own id or write Parquet output", e);
    } finally {
      Files.deleteIfExists(file.toPath());
      file = null;
    }
    files++;
    record = null;
    id = null;
    times.add(Phase.WRITE, System.nanoTime() - t0);
  }

  /** Fails when a volume is incomplete (the task then fails and its output is discarded); deletes scratch. */
  @Override
  public void close() throws IOException {
    if (ch != null) {
      String r = record;
      int at = next;
      ch.close();
      ch = null;
      Files.deleteIfExists(file.toPath());
      throw new IllegalStateException("output of " + r + " ended at plane " + at + " of " + shape.d());
    }
  }
}
