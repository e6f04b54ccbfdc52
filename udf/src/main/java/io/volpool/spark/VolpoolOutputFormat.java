package io.volpool.spark;

import io.volpool.backend.Phase;
import io.volpool.exec.BatchRunner;
import io.volpool.exec.TaskState;
import io.volpool.io.NpyBatchWriter;
import io.volpool.io.NpyVolumeWriter;
import io.volpool.io.OutputSpec;
import io.volpool.io.ParquetBatchWriter;
import io.volpool.io.ParquetVolumeInput;
import io.volpool.io.VolumeSource;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.spark.TaskContext;

/**
 * The job's output, through Hadoop's commit protocol as Spark runs it
 * ({@code saveAsNewAPIHadoopDataset}): each task attempt writes into its own work folder
 * ({@link FileOutputCommitter#getWorkPath()}), Spark lets one attempt per task commit, and the
 * job commit moves the committed files into the output folder and writes {@code _SUCCESS}. A
 * record is a finished batch; Parquet rows go to {@code part-r-NNNNN.parquet} in the folder their
 * input came from, .npy volumes to their input file's relative path.
 */
public final class VolpoolOutputFormat extends FileOutputFormat<Void, BatchRunner.Finished> {
  /** Configuration key of the serialized {@link OutputSpec}. */
  public static final String SPEC = "volpool.output.spec";

  /** Stores {@code spec} in {@code conf} for the tasks. */
  public static void setSpec(Configuration conf, OutputSpec spec) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (ObjectOutputStream o = new ObjectOutputStream(b)) {
      o.writeObject(spec);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    conf.set(SPEC, Base64.getEncoder().encodeToString(b.toByteArray()));
  }

  static OutputSpec spec(Configuration conf) {
    String s = conf.get(SPEC);
    if (s == null) {
      throw new IllegalStateException(SPEC + " is not set");
    }
    try (ObjectInputStream o = new ObjectInputStream(new ByteArrayInputStream(Base64.getDecoder().decode(s)))) {
      return (OutputSpec) o.readObject();
    } catch (IOException | ClassNotFoundException e) {
      throw new IllegalStateException("cannot read " + SPEC, e);
    }
  }

  @Override
  public RecordWriter<Void, BatchRunner.Finished> getRecordWriter(TaskAttemptContext ctx) throws IOException {
    OutputSpec spec = spec(ctx.getConfiguration());
    Path work = ((FileOutputCommitter) getOutputCommitter(ctx)).getWorkPath();
    Configuration conf = ctx.getConfiguration();
    String file = getUniqueFile(ctx, "part", ".parquet");
    return new RecordWriter<>() {
      final Map<String, ParquetBatchWriter> parquet = new LinkedHashMap<>();
      NpyBatchWriter npy;
      NpyVolumeWriter npyVolumes;
      /** The task's measurements, which arrive with its output (none when the task has no output). */
      TaskState state;

      @Override
      public void write(Void key, BatchRunner.Finished f) throws IOException {
        state = f.task();
        if (spec.isNpy() && f.planes() != null) {
          // volumes stored across rows: one .npy per volume, named by its id, filled as its rows come
          if (npyVolumes == null) {
            npyVolumes = new NpyVolumeWriter(work, conf, state.times(), () -> PartitionRunner.LOCAL_DIRS.create("npy-out"));
          }
          for (int i = 0; i < f.items().size(); i++) {
            npyVolumes.write(f.items().get(i), f.outShape(), f.output(), f.offsets()[i], f.planes()[i][0], f.planes()[i][1]);
          }
          return;
        }
        if (spec.isNpy()) {
          if (npy == null) {
            npy = new NpyBatchWriter(work, conf, state.times());
          }
          npy.write(f.items(), f.outShape(), f.output(), f.offsets());
          return;
        }
        // consecutive volumes of one input folder go to that folder's file
        List<VolumeSource> items = f.items();
        int from = 0;
        while (from < items.size()) {
          String folder = folder(items.get(from));
          int to = from + 1;
          while (to < items.size() && folder(items.get(to)).equals(folder)) {
            to++;
          }
          ParquetBatchWriter w = parquet.get(folder);
          if (w == null) {
            long t0 = System.nanoTime();
            w = new ParquetBatchWriter(folder.isEmpty() ? new Path(work, file) : new Path(work.toString() + "/" + folder + "/" + file),
                spec, conf, state.times());
            state.times().add(Phase.WRITE, System.nanoTime() - t0);
            parquet.put(folder, w);
          }
          List<VolumeSource> part = from == 0 && to == items.size() ? items : new ArrayList<>(items.subList(from, to));
          w.write(part, f.outShape(), f.output(), Arrays.copyOfRange(f.offsets(), from, to),
              f.planes() == null ? null : Arrays.copyOfRange(f.planes(), from, to));
          from = to;
        }
      }

      private String folder(VolumeSource v) {
        return v.outputFolder();
      }

      @Override
      public void close(TaskAttemptContext c) throws IOException {
        IOException first = null;
        for (ParquetBatchWriter w : parquet.values()) {
          try {
            w.close();
            state.wrote(w.rows(), w.volumeStarts(), 1);
          } catch (IOException e) {
            first = first == null ? e : first;
          }
        }
        if (npy != null) {
          npy.close();
          state.wrote(npy.volumes(), npy.volumes(), npy.files());
        }
        if (npyVolumes != null) {
          npyVolumes.close();
          state.wrote(npyVolumes.files(), npyVolumes.files(), npyVolumes.files());
        }
        if (first != null) {
          throw first;
        }
      }
    };
  }

  @Override
  public synchronized OutputCommitter getOutputCommitter(TaskAttemptContext context) throws IOException {
    return new TimedCommitter(getOutputPath(context), context);
  }

  /**
   * Hadoop's file committer (algorithm 1), with the task commit's time added to the task's
   * {@link Phase#COMMIT}, and a job commit that also merges files and folders whose names hold
   * {@code :} (Hadoop's own merge parses each name as a URI and fails on them).
   */
  static final class TimedCommitter extends FileOutputCommitter {
    private final Path output;

    TimedCommitter(Path output, TaskAttemptContext context) throws IOException {
      super(output, context);
      this.output = output;
    }

    @Override
    public void commitJob(org.apache.hadoop.mapreduce.JobContext context) throws IOException {
      org.apache.hadoop.fs.FileSystem fs = io.volpool.io.Files2.fs(output, context.getConfiguration());
      Path attempt = getJobAttemptPath(context);
      if (fs.exists(attempt)) {
        for (org.apache.hadoop.fs.FileStatus task : fs.listStatus(attempt)) {
          if (task.isDirectory()) {
            for (org.apache.hadoop.fs.FileStatus f : fs.listStatus(task.getPath())) {
              merge(fs, f, output);
            }
          }
        }
      }
      cleanupJob(context);
      fs.create(new Path(output, SUCCEEDED_FILE_NAME), true).close();
    }

    private static Path child(Path dir, String name) {
      return new Path(dir.toString() + "/" + name);
    }

    private static void merge(org.apache.hadoop.fs.FileSystem fs, org.apache.hadoop.fs.FileStatus from, Path toDir)
        throws IOException {
      Path target = child(toDir, from.getPath().getName());
      if (from.isFile()) {
        if (fs.exists(target)) {
          fs.delete(target, true);
        }
        if (!fs.rename(from.getPath(), target)) {
          throw new IOException("could not move " + from.getPath() + " to " + target);
        }
      } else if (!fs.exists(target)) {
        if (!fs.rename(from.getPath(), target)) {
          throw new IOException("could not move " + from.getPath() + " to " + target);
        }
      } else {
        for (org.apache.hadoop.fs.FileStatus c : fs.listStatus(from.getPath())) {
          merge(fs, c, target);
        }
      }
    }

    @Override
    public void commitTask(TaskAttemptContext context) throws IOException {
      long t0 = System.nanoTime();
      super.commitTask(context);
      TaskState s = PartitionRunner.current();
      if (s != null) {
        s.times().add(Phase.COMMIT, System.nanoTime() - t0);
      }
    }
  }
}
