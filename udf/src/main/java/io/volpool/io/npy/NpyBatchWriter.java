package io.volpool.io.npy;

import io.volpool.format.Dtype;
import io.volpool.io.ChannelOutputFile;
import io.volpool.io.VolumeSource;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.format.Npy;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Writes .npy outputs, one per input file at the same relative path under the task's work folder,
 * with the input's leading dimensions: the header first, then each volume's bytes streamed from the
 * batch output as they come (the volumes of one file arrive in order, possibly over several
 * batches), so no file is gathered in memory. Owned by the task's output writer; counts files.
 */
public final class NpyBatchWriter implements AutoCloseable {
  private final Path root;
  private final Configuration conf;
  private final PhaseTimes times;
  /** The input file whose output is open (its first volume's place), or null. */
  private VolumeSource.FilePlace current;
  private OutputStream os;
  private int written;
  private long files;
  private long volumes;
  private byte[] chunk;

  /** @param root the task's work folder; outputs go to {@code root/relative path of the input file} */
  public NpyBatchWriter(Path root, Configuration conf, PhaseTimes times) {
    this.root = root;
    this.conf = conf;
    this.times = times;
  }

  /** Files completed so far. */
  public long files() {
    return files;
  }

  public long volumes() {
    return volumes;
  }

  /** Writes the batch's volumes of {@code outShape}, each {@code dtype}'s bytes at its offset in {@code out}. */
  public void write(List<VolumeSource> items, VolumeShape outShape, Dtype dtype, ByteBuffer out, long[] offsets)
      throws IOException {
    for (int i = 0; i < items.size(); i++) {
      VolumeSource.FilePlace v = items.get(i).filePlace();
      if (v == null) {
        throw new IllegalStateException(items.get(i).record() + ": .npy output is written from .npy input only");
      }
      if (current == null || !current.path().equals(v.path())) {
        if (current != null) {
          throw new IllegalStateException(current.path() + ": output file closed after " + written + " of "
              + current.count() + " volumes");
        }
        open(v, outShape, dtype);
      }
      if (v.index() != written) {
        throw new IllegalStateException(items.get(i).record() + " arrived out of order (expected volume " + written + ")");
      }
      long t0 = System.nanoTime();
      ByteBuffer b = out.slice((int) offsets[i], (int) (outShape.numel() * dtype.itemSize()));
      if (b.isDirect() && os instanceof WritableByteChannel ch) {
        // a pinned or mapped output to a local file: one system call, no copy through the heap
        ch.write(b);
      } else {
        // a heap buffer through a channel would be copied whole into a temporary direct buffer: in chunks
        byte[] c = chunk();
        while (b.hasRemaining()) {
          int n = Math.min(c.length, b.remaining());
          b.get(c, 0, n);
          os.write(c, 0, n);
        }
      }
      times.add(Phase.WRITE, System.nanoTime() - t0);
      written++;
      volumes++;
      if (written == current.count()) {
        finishFile();
      }
    }
  }

  private byte[] chunk() {
    if (chunk == null) {
      chunk = new byte[1 << 20];
    }
    return chunk;
  }

  private void open(VolumeSource.FilePlace f, VolumeShape outShape, Dtype dtype) throws IOException {
    long t0 = System.nanoTime();
    long[] leading = f.leading();
    long[] shape = new long[leading.length + 4];
    System.arraycopy(leading, 0, shape, 0, leading.length);
    int[] d = outShape.toArray();
    for (int k = 0; k < 4; k++) {
      shape[leading.length + k] = d[k];
    }
    // a relative path is never parsed on its own as a URI: a name may hold ':'
    Path target = new Path(root.toString() + "/" + f.relative());
    os = ChannelOutputFile.of(target, conf).create(0);
    os.write(Npy.header(shape, dtype));
    current = f;
    written = 0;
    times.add(Phase.WRITE, System.nanoTime() - t0);
  }

  private void finishFile() throws IOException {
    long t0 = System.nanoTime();
    os.close();
    os = null;
    current = null;
    written = 0;
    files++;
    times.add(Phase.WRITE, System.nanoTime() - t0);
  }

  /** Closes the last file; a file left incomplete is an error (the task then fails and its output is discarded). */
  @Override
  public void close() throws IOException {
    if (current != null) {
      String p = current.path();
      int w = written;
      os.close();
      throw new IllegalStateException(p + ": output file ended after " + w + " of " + current.count() + " volumes");
    }
  }
}
