package io.volpool.spark;

import io.volpool.backend.Backend;
import io.volpool.backend.Backends;
import io.volpool.format.Npy;
import io.volpool.format.NpyArray;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The per-partition work of an .npy job. Input rows come from Spark's {@code binaryFile} source
 * ({@code path}, {@code content}); each file holds one volume {@code [C,D,H,W]} or a batch
 * {@code [N,C,D,H,W]}. Volumes of consecutive files are batched together; each file's output is
 * written, with the same leading dims, under {@code stagingDir} at the file's path relative to
 * {@code inputRoot}. The driver moves staged files into place only when the whole job succeeded.
 * Emits one row per file: {@code (relative_path, volumes, bytes_in, bytes_out)}.
 */
public final class NpyFileFunction implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  /** The schema of the rows this function emits. */
  public static final StructType RESULT_SCHEMA = new StructType()
      .add("relative_path", DataTypes.StringType, false)
      .add("volumes", DataTypes.LongType, false)
      .add("bytes_in", DataTypes.LongType, false)
      .add("bytes_out", DataTypes.LongType, false);

  private final RunSpec spec;
  private final String inputRoot;
  private final String stagingDir;
  private final SerializableHadoopConf conf;
  private final JobMetrics metrics;

  public NpyFileFunction(RunSpec spec, String inputRoot, String stagingDir, SerializableHadoopConf conf,
      JobMetrics metrics) {
    this.spec = spec;
    this.inputRoot = inputRoot;
    this.stagingDir = stagingDir;
    this.conf = conf;
    this.metrics = metrics;
  }

  /** The path of {@code file} relative to {@code root} (a directory, or the file itself). */
  public static String relativePath(String root, String file) {
    URI r = new Path(root).toUri();
    URI f = new Path(file).toUri();
    String rp = r.getPath();
    String fp = f.getPath();
    if (fp.equals(rp)) {
      return new Path(fp).getName();
    }
    String prefix = rp.endsWith("/") ? rp : rp + "/";
    if (!fp.startsWith(prefix)) {
      return new Path(fp).getName();
    }
    return fp.substring(prefix.length());
  }

  /** One file being processed: its volumes and the output gathered so far. */
  private final class NpyFile {
    final String relative;
    final NpyVolumes in;
    byte[] out;
    long[] outShape;
    int done;

    NpyFile(String path, byte[] content) {
      this.relative = relativePath(inputRoot, path);
      this.in = NpyVolumes.read(path, content);
    }
  }

  /** One volume of a file. */
  private static final class FileVolume implements VolumeSource {
    final NpyFile file;
    final int index;

    FileVolume(NpyFile file, int index) {
      this.file = file;
      this.index = index;
    }

    @Override
    public String record() {
      return file.in.record(index);
    }

    @Override
    public VolumeShape shape() {
      return file.in.shape();
    }

    @Override
    public void copyTo(ByteBuffer dst) {
      dst.put(file.in.volume(index));
    }
  }

  @Override
  public Iterator<Row> call(Iterator<Row> files) {
    Backend backend = Backends.get(spec.device(), spec.cpuThreads(), spec.gpuTasksPerDevice());
    TaskContext tc = TaskContext.get();
    String task = "partition " + (tc == null ? 0 : tc.partitionId());
    Iterator<FileVolume> volumes = new Iterator<>() {
      NpyFile cur;
      int next;

      @Override
      public boolean hasNext() {
        while ((cur == null || next >= cur.in.count()) && files.hasNext()) {
          Row r = files.next();
          cur = new NpyFile(r.getString(r.fieldIndex("path")), (byte[]) r.get(r.fieldIndex("content")));
          next = 0;
        }
        return cur != null && next < cur.in.count();
      }

      @Override
      public FileVolume next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return new FileVolume(cur, next++);
      }
    };
    BatchRunner<FileVolume, Row> runner = new BatchRunner<>(volumes, backend, spec, this::emit, task);
    if (tc != null) {
      tc.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) ctx -> runner.close());
    }
    return new Iterator<>() {
      Row pending;
      boolean counted;

      @Override
      public boolean hasNext() {
        while (pending == null && runner.hasNext()) {
          pending = runner.next();
        }
        if (pending == null && !counted) {
          counted = true;
          metrics.add(runner, backend.name());
          runner.close();
        }
        return pending != null;
      }

      @Override
      public Row next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        Row r = pending;
        pending = null;
        return r;
      }
    };
  }

  /** Gathers a volume's output into its file; writes the file and returns its row after the last one. */
  private Row emit(FileVolume v, VolumeShape outShape, ByteBuffer out) {
    NpyFile f = v.file;
    int ob = (int) outShape.bytes();
    long[] leading = f.in.leading();
    if (f.out == null) {
      f.out = new byte[Math.toIntExact((long) ob * f.in.count())];
      long[] s = new long[leading.length + 4];
      System.arraycopy(leading, 0, s, 0, leading.length);
      int[] d = outShape.toArray();
      for (int i = 0; i < 4; i++) {
        s[leading.length + i] = d[i];
      }
      f.outShape = s;
    }
    out.get(f.out, v.index * ob, ob);
    f.done++;
    if (f.done < f.in.count()) {
      return null;
    }
    Path target = new Path(stagingDir, f.relative);
    try {
      FileSystem fs = target.getFileSystem(conf.get());
      try (OutputStream os = fs.create(target, true)) {
        Npy.write(new NpyArray(f.outShape, ByteBuffer.wrap(f.out).order(ByteOrder.LITTLE_ENDIAN)), os);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + target + " for input " + f.in.path() + " failed: " + e.getMessage(), e);
    }
    long in = f.in.shape().bytes() * f.in.count();
    long outBytes = f.out.length;
    f.out = null;
    return RowFactory.create(f.relative, (long) f.in.count(), in, outBytes);
  }

}
