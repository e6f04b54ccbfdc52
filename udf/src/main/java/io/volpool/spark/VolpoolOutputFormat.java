package io.volpool.spark;

import io.volpool.backend.Phase;
import io.volpool.exec.BatchRunner;
import io.volpool.exec.TaskState;
import io.volpool.io.npy.NpyBatchWriter;
import io.volpool.io.npy.NpyPlanesInPlace;
import io.volpool.io.npy.NpyVolumeWriter;
import io.volpool.io.OutputSpec;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.io.parquet.ParquetVolumeInput;
import io.volpool.io.ShippedConf;
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
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.JobStatus;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitterFactory;
import org.apache.hadoop.mapreduce.task.JobContextImpl;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.TaskContext;

/**
 * The job's output, through Hadoop's commit protocol as Spark runs it
 * ({@code saveAsNewAPIHadoopDataset}): each task attempt writes into its own work folder
 * ({@link PathOutputCommitter#getWorkPath()}), Spark lets one attempt per task commit, and the
 * job commit publishes the committed files. A record is a finished batch; Parquet rows go to
 * {@code part-r-NNNNN.parquet} in the folder their input came from, .npy volumes to their input
 * file's relative path.
 *
 * <p>Two commits, chosen by the driver ({@link #COMMIT}): {@code rename}, Hadoop's file committer
 * into a staging folder whose job commit moves the tasks' files together (the driver then renames
 * the folder into place); and {@code object-store}, the committer Hadoop's
 * {@link PathOutputCommitterFactory} gives the output's scheme (S3A's magic committer: tasks
 * upload their files as multipart uploads left uncompleted, so nothing is visible until the job
 * commit completes them), whose job commit Spark's call leaves to the driver, which makes it after
 * its checks ({@link DeferredJobCommitter}).
 */
public final class VolpoolOutputFormat extends FileOutputFormat<Void, BatchRunner.Finished> {
  /** Configuration key of the serialized {@link OutputSpec}. */
  public static final String SPEC = "volpool.output.spec";
  /** Configuration key of the commit: {@link #RENAME} (default) or {@link #OBJECT_STORE}. */
  public static final String COMMIT = "volpool.output.commit";
  public static final String RENAME = "rename";
  public static final String OBJECT_STORE = "object-store";
  /**
   * Configuration key: a failed job keeps its committed tasks' folders for the next resume ({@code mode=resume});
   * the job abort then leaves the staging to the driver.
   */
  public static final String KEEP_COMMITTED = "volpool.output.keepCommitted";
  /** Configuration key set by a resumed run: its staging folder exists already, holding the tasks it keeps. */
  public static final String RESUMED = "volpool.output.resumed";

  static boolean objectStore(Configuration conf) {
    return OBJECT_STORE.equals(conf.get(COMMIT, RENAME));
  }

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

  /** Whole task contexts by the configuration Spark built from what was shipped, one per task attempt. */
  private static final Map<Configuration, Whole> WHOLE = java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

  /** A whole context, and how many properties the shipped configuration had when it was made. */
  private record Whole(TaskAttemptContext ctx, int shippedSize) {}

  /**
   * {@code ctx} with the job's whole configuration: the driver ships it shrunk ({@link ShippedConf}),
   * and Spark builds its contexts from what was shipped. Made once per task attempt (Spark hands the
   * same context to the writer and to each commit step): each is a copy of Hadoop's ~1,070 defaults,
   * which sixteen first tasks made five times each and waited on one another for (the H200 profile).
   */
  static TaskAttemptContext whole(TaskAttemptContext ctx) {
    Configuration shipped = ctx.getConfiguration();
    if (shipped.getRaw(ShippedConf.DEFAULTS) == null) {
      return ctx;
    }
    Whole w = WHOLE.get(shipped);
    int size = shipped.size();
    if (w == null || w.shippedSize() != size || !w.ctx().getTaskAttemptID().equals(ctx.getTaskAttemptID())) {
      // new, or the shipped configuration changed since (Spark sets its ids before it hands the context on)
      w = new Whole(new TaskAttemptContextImpl(ShippedConf.restoreJob(shipped), ctx.getTaskAttemptID()), size);
      WHOLE.put(shipped, w);
    }
    return w.ctx();
  }

  static JobContext whole(JobContext ctx) {
    if (ctx instanceof TaskAttemptContext) {
      return whole((TaskAttemptContext) ctx);
    }
    Configuration shipped = ctx.getConfiguration();
    return shipped.getRaw(ShippedConf.DEFAULTS) == null ? ctx : new JobContextImpl(ShippedConf.restoreJob(shipped), ctx.getJobID());
  }

  @Override
  public RecordWriter<Void, BatchRunner.Finished> getRecordWriter(TaskAttemptContext shipped) throws IOException {
    TaskAttemptContext ctx = whole(shipped);
    OutputSpec spec = spec(ctx.getConfiguration());
    Path work = ((PathOutputCommitter) getOutputCommitter(ctx)).getWorkPath();
    Configuration conf = ctx.getConfiguration();
    // part-r-00000.parquet; an appending run's parts carry its id (mapreduce.output.basename: part-<id>)
    String file = getUniqueFile(ctx, getOutputName(ctx), ".parquet");
    return new RecordWriter<>() {
      final Map<String, ParquetBatchWriter> parquet = new LinkedHashMap<>();
      NpyBatchWriter npy;
      NpyVolumeWriter npyVolumes;
      NpyPlanesInPlace npyInPlace;
      /** The task's measurements, which arrive with its output (none when the task has no output). */
      TaskState state;

      @Override
      public void write(Void key, BatchRunner.Finished f) throws IOException {
        try {
          writeBatch(f);
        } catch (InternalError | IOException | RuntimeException e) {
          if (MappedFaults.isMappedFault(e)) {
            // the batch's output planes are in a mapped scratch file (a slabbed volume's) that could not get its blocks
            org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
            throw MappedFaults.explain(e, null, conf, env == null ? null : env.blockManager().diskBlockManager().localDirs());
          }
          throw e;
        }
      }

      private void writeBatch(BatchRunner.Finished f) throws IOException {
        state = f.task();
        if (spec.isNpy() && f.planes() != null && spec.npyInPlace()) {
          // ranges of planes (of a volume spread over tasks, or run in slabs): by position into the staged file, or as
          // parts the driver joins
          if (npyInPlace == null) {
            npyInPlace = new NpyPlanesInPlace(spec.npyRanges(), getOutputPath(ctx), work, conf, state.times());
          }
          for (int i = 0; i < f.items().size(); i++) {
            npyInPlace.write(f.items().get(i), f.outShape(), f.dtype(), f.output(), f.offsets()[i], f.planes()[i][0],
                f.planes()[i][1]);
          }
          return;
        }
        if (spec.isNpy() && f.planes() != null) {
          // volumes stored across rows: one .npy per volume, named by its id, filled as its rows come
          if (npyVolumes == null) {
            npyVolumes = new NpyVolumeWriter(work, conf, state.times(), () -> PartitionRunner.LOCAL_DIRS.create("npy-out"));
          }
          for (int i = 0; i < f.items().size(); i++) {
            npyVolumes.write(f.items().get(i), f.outShape(), f.dtype(), f.output(), f.offsets()[i], f.planes()[i][0], f.planes()[i][1]);
          }
          return;
        }
        if (spec.isNpy()) {
          if (npy == null) {
            npy = new NpyBatchWriter(work, conf, state.times());
          }
          npy.write(f.items(), f.outShape(), f.dtype(), f.output(), f.offsets());
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
            w.task(ctx.getTaskAttemptID().getTaskID().getId());
            state.times().add(Phase.WRITE, System.nanoTime() - t0);
            parquet.put(folder, w);
          }
          List<VolumeSource> part = from == 0 && to == items.size() ? items : new ArrayList<>(items.subList(from, to));
          w.write(part, f.outShape(), f.dtype(), f.output(), Arrays.copyOfRange(f.offsets(), from, to),
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
        if (npyInPlace != null) {
          // durable, then marked: the task commit publishes the markers of planes that are on disk
          npyInPlace.close();
          state.wrote(npyInPlace.starts(), npyInPlace.starts(), npyInPlace.files());
        }
        if (first != null) {
          throw first;
        }
        // the bad records the task set aside, committed with its output (also by a task that wrote none)
        TaskState task = state != null ? state : PartitionRunner.current();
        if (task != null && !task.quarantined().isEmpty()) {
          writeQuarantined(task.quarantined(), new Path(work, io.volpool.io.QuarantinedRecord.FOLDER + "/"
              + io.volpool.io.QuarantinedRecord.fileName(ctx.getTaskAttemptID().getTaskID().getId())), conf);
        }
      }
    };
  }

  /** Writes {@code records}, one JSON line each, to {@code file}: a task's side file, committed with the task. */
  static void writeQuarantined(List<io.volpool.io.QuarantinedRecord> records, Path file, Configuration conf)
      throws IOException {
    StringBuilder b = new StringBuilder();
    for (io.volpool.io.QuarantinedRecord r : records) {
      b.append(r.toJson()).append('\n');
    }
    try (org.apache.hadoop.fs.FSDataOutputStream os = file.getFileSystem(conf).create(file, true)) {
      os.write(b.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
  }

  @Override
  public synchronized OutputCommitter getOutputCommitter(TaskAttemptContext shipped) throws IOException {
    TaskAttemptContext context = whole(shipped);
    Path out = getOutputPath(context);
    return objectStore(context.getConfiguration())
        ? new DeferredJobCommitter(out, context, PathOutputCommitterFactory.getCommitterFactory(out,
            context.getConfiguration()).createOutputCommitter(out, context))
        : new TimedCommitter(out, context);
  }

  /**
   * The driver checked the output itself (it must not exist, or may be replaced); on an object store
   * the output folder holds the committer's own pending-upload folder while the job runs.
   */
  @Override
  public void checkOutputSpecs(JobContext shipped) throws IOException {
    JobContext job = whole(shipped);
    if (!objectStore(job.getConfiguration()) && !job.getConfiguration().getBoolean(RESUMED, false)) {
      super.checkOutputSpecs(job);
    } else if (getOutputPath(job) == null) {
      throw new IOException("no output path set");
    }
  }

  /**
   * An object-store committer (S3A's magic committer) with its job commit left to the driver: Spark
   * calls {@link #commitJob} once every task has committed, which would make the output visible
   * before the driver has counted what the tasks committed and, under overwrite, before it has taken
   * the commit lock and removed the old output. The driver makes the job commit itself, with a
   * committer of the same job (OutputCommit.publish), and the job's abort too (OutputCommit.abort: it
   * aborts the uploads its tasks' records name, which the committer's own abort would delete unread
   * where it cannot list uploads). Task setup, commit and abort go to the committer.
   */
  static final class DeferredJobCommitter extends PathOutputCommitter {
    private final PathOutputCommitter inner;

    DeferredJobCommitter(Path output, TaskAttemptContext context, PathOutputCommitter inner) throws IOException {
      super(output, context);
      this.inner = inner;
    }

    @Override
    public Path getOutputPath() {
      return inner.getOutputPath();
    }

    @Override
    public Path getWorkPath() throws IOException {
      return inner.getWorkPath();
    }

    @Override
    public void setupJob(org.apache.hadoop.mapreduce.JobContext context) throws IOException {
      inner.setupJob(whole(context));
    }

    @Override
    public void commitJob(org.apache.hadoop.mapreduce.JobContext context) {
      // the driver commits after its checks (OutputCommit.publish)
    }

    @Override
    public void abortJob(org.apache.hadoop.mapreduce.JobContext context, org.apache.hadoop.mapreduce.JobStatus.State state) {
      // the driver aborts the uploads from their records (OutputCommit.abort)
    }

    @Override
    public void setupTask(TaskAttemptContext context) throws IOException {
      inner.setupTask(whole(context));
    }

    /**
     * A task attempt that wrote nothing (a resumed run's kept task, which reads nothing) has no work folder:
     * nothing to commit (the magic committer would fail listing it).
     */
    @Override
    public boolean needsTaskCommit(TaskAttemptContext context) throws IOException {
      try {
        return inner.needsTaskCommit(whole(context));
      } catch (java.io.FileNotFoundException e) {
        return false;
      }
    }

    @Override
    public void commitTask(TaskAttemptContext context) throws IOException {
      long t0 = System.nanoTime();
      Path work = inner.getWorkPath();
      if (work != null && !work.getFileSystem(whole(context).getConfiguration()).exists(work)) {
        return; // wrote nothing
      }
      inner.commitTask(whole(context));
      TimedCommitter.addCommitTime(System.nanoTime() - t0);
    }

    @Override
    public void abortTask(TaskAttemptContext context) throws IOException {
      inner.abortTask(whole(context));
    }

    @Override
    public String toString() {
      return "DeferredJobCommitter{" + inner + "}";
    }
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
    public void setupJob(JobContext context) throws IOException {
      super.setupJob(whole(context));
    }

    @Override
    public void abortJob(JobContext context, JobStatus.State state) throws IOException {
      JobContext job = whole(context);
      if (job.getConfiguration().getBoolean(KEEP_COMMITTED, false)) {
        // mode=resume: Hadoop's abort would delete _temporary, the committed tasks' folders with it; the driver
        // keeps them for the next resume (which removes the attempts that never committed)
        return;
      }
      super.abortJob(job, state);
    }

    @Override
    public void setupTask(TaskAttemptContext context) throws IOException {
      super.setupTask(whole(context));
    }

    @Override
    public boolean needsTaskCommit(TaskAttemptContext context) throws IOException {
      return super.needsTaskCommit(whole(context));
    }

    @Override
    public void abortTask(TaskAttemptContext context) throws IOException {
      super.abortTask(whole(context));
    }

    @Override
    public void commitJob(JobContext shipped) throws IOException {
      JobContext context = whole(shipped);
      org.apache.hadoop.fs.FileSystem fs = io.volpool.io.Files2.fs(output, context.getConfiguration());
      Path attempt = getJobAttemptPath(context);
      if (fs.exists(attempt)) {
        for (org.apache.hadoop.fs.FileStatus task : fs.listStatus(attempt)) {
          // only committed tasks' folders: _temporary holds the attempts that never committed (a lost executor's,
          // a losing speculative attempt's), whose files may be partial or duplicate a committed task's (Hadoop's
          // own commit filters them the same way, by name)
          if (task.isDirectory() && !task.getPath().getName().equals(PENDING_DIR_NAME)) {
            for (org.apache.hadoop.fs.FileStatus f : fs.listStatus(task.getPath())) {
              // two committed tasks wrote one name: part files never collide, .npy files named by id do
              io.volpool.io.Files2.merge(fs, f, output, existing -> {
                throw new io.volpool.io.BadRecordException("output file " + outputName(existing), "two tasks wrote it:"
                    + " each id names one .npy file (an id and the same id with .npy name the same one), so ids must be"
                    + " unique; give each volume its own id or write Parquet output");
              });
            }
          }
        }
      }
      cleanupJob(context);
      fs.create(new Path(output, SUCCEEDED_FILE_NAME), true).close();
    }

    @Override
    public void commitTask(TaskAttemptContext context) throws IOException {
      long t0 = System.nanoTime();
      super.commitTask(whole(context));
      addCommitTime(System.nanoTime() - t0);
    }

    /** The output file a committed file stands for: itself, or the .npy a marker of planes written in place names. */
    static String outputName(Path p) {
      String s = p.toUri().getPath();
      String markers = "/" + NpyPlanesInPlace.MARKERS + "/";
      int i = s.indexOf(markers);
      return i < 0 ? p.getName() : s.substring(i + markers.length(), s.lastIndexOf('/'));
    }

    /** Adds a task commit's time to the task running on this thread. */
    static void addCommitTime(long nanos) {
      TaskState s = PartitionRunner.current();
      if (s != null) {
        s.times().add(Phase.COMMIT, nanos);
      }
    }
  }
}
