package io.volpool.job.commit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitterFactory;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How an output on S3 is committed without renaming data: through S3A's magic committer. A task
 * writes each file as a multipart upload that it does not complete (its parts go straight to S3;
 * only a small {@code .pending} record lands under the output's {@code __magic_job-ID} folder), a
 * task commit gathers its records into a {@code .pendingset}, and the job commit completes the
 * uploads: until then no data file is visible, so a failed or killed run leaves nothing a reader
 * would take for output. Spark's job commit is deferred to the driver (see
 * {@code VolpoolOutputFormat.DeferredJobCommitter}), which commits after taking the output's lock
 * and, under overwrite, removing the old output ({@link #publish}). The output then exists only once it
 * holds something besides such folders. A dead run's uploads are aborted from its own records by the
 * next run on the output. The lock is advisory here (S3 has no exclusive create: a second run could take
 * it in the same instant), and an old output replaced under overwrite is deleted just before the new one
 * is committed, not moved aside (that would copy it): a run killed in between leaves neither.
 *
 * <p>Only {@code s3a://} has such a committer here; other object stores are refused before any work
 * ({@link #requireSafe}). Hadoop's committer documentation is the reference:
 * https://hadoop.apache.org/docs/r3.4.1/hadoop-aws/tools/hadoop-aws/committers.html
 */
final class MagicCommit extends OutputCommit {
  private static final Logger LOG = LoggerFactory.getLogger(MagicCommit.class);
  /** The magic committer's folder of a job under its output: {@code __magic_job-ID}. */
  public static final String MAGIC = "__magic_job-";
  /** Schemes of object stores, whose rename is a copy and a delete: neither atomic nor exclusive. */
  private static final Set<String> OBJECT_STORES = Set.of("s3a", "s3", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs",
      "oss", "cosn", "obs");
  /** S3A's path capability of the magic committer (fs.s3a.committer.magic.enabled for the bucket). */
  static final String MAGIC_CAPABILITY = "fs.s3a.capability.magic.committer";

  /** The job commit began (files may be visible from here on) and ended ({@link #publish}). */
  private boolean committing;
  private boolean published;
  /** An append's: the files the output held before its uploads completed; null otherwise. */
  private Set<Path> appendedTo;

  /** Every file of the output but the magic committer's folders. */
  private Set<Path> dataFiles() throws IOException {
    Set<Path> files = new java.util.HashSet<>();
    for (FileStatus st : fs.listStatus(output)) {
      if (st.getPath().getName().startsWith(MAGIC)) {
        continue;
      }
      if (st.isFile()) {
        files.add(st.getPath());
      } else {
        RemoteIterator<LocatedFileStatus> it = fs.listFiles(st.getPath(), true);
        while (it.hasNext()) {
          files.add(it.next().getPath());
        }
      }
    }
    return files;
  }

  /**
   * A commit of run {@code id}; {@code resumes} (then equal to {@code id}): the dead run whose committed
   * tasks' uploads (their {@code .pendingset} records in its magic folder) this run keeps and completes
   * with its own. The uploads of its attempts that never committed are aborted first.
   */
  MagicCommit(FileSystem fs, Path output, String id, boolean overwrite, String resumes, io.volpool.conf.OutputMode mode)
      throws IOException {
    super(fs, output, id, overwrite, output, true, resumes, mode);
    if (resumes != null) {
      abortUncommitted();
    }
  }

  /** The records of run {@code id}'s magic folder, by kind: {@code .pendingset} (committed tasks) and {@code .pending}. */
  private List<Path> records(String suffix) throws IOException {
    List<Path> out = new ArrayList<>();
    Path dir = magicDir(output, id);
    if (!fs.exists(dir)) {
      return out;
    }
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(dir, true);
    while (it.hasNext()) {
      Path p = it.next().getPath();
      if (p.getName().endsWith(suffix)) {
        out.add(p);
      }
    }
    return out;
  }

  /**
   * Whether the committed task of upload record {@code record} (a {@code .pendingset}) set bad records aside: one of
   * its uploads is its side file ({@link io.volpool.io.QuarantinedRecord#FOLDER}), which cannot be read before the
   * job commit completes it.
   */
  static boolean uploadsSideFile(FileSystem fs, Path record) throws IOException {
    for (String[] u : uploads(fs, record)) {
      if (u[0].contains("/" + io.volpool.io.QuarantinedRecord.FOLDER + "/")) {
        return true;
      }
    }
    return false;
  }

  /** The {@code [destinationKey, uploadId]} of each upload a {@code .pending} or {@code .pendingset} record names. */
  private static List<String[]> uploads(FileSystem fs, Path record) throws IOException {
    List<String[]> out = new ArrayList<>();
    JsonNode j;
    try (InputStream in = fs.open(record)) {
      j = new ObjectMapper().readTree(in);
    }
    for (JsonNode c : record.getName().endsWith(".pendingset") ? j.path("commits") : List.of(j)) {
      if (c.hasNonNull("destinationKey") && c.hasNonNull("uploadId")) {
        out.add(new String[] {c.get("destinationKey").asText(), c.get("uploadId").asText()});
      }
    }
    return out;
  }

  /** Aborts the uploads of the taken-over run's task attempts that never committed, and deletes their records. */
  private void abortUncommitted() throws IOException {
    java.util.Set<String> committed = new java.util.HashSet<>();
    for (Path set : records(".pendingset")) {
      for (String[] u : uploads(fs, set)) {
        committed.add(u[1]);
      }
    }
    int aborted = 0;
    for (Path pending : records(".pending")) {
      for (String[] u : uploads(fs, pending)) {
        if (!committed.contains(u[1]) && S3aUploads.abort(fs, u[0], u[1])) {
          aborted++;
        }
      }
      fs.delete(pending, false);
    }
    if (aborted > 0) {
      LOG.info("volpool: aborted {} upload(s) of task attempts of run {} that never committed", aborted, id);
    }
  }

  @Override
  public java.util.SortedMap<Integer, Path> keptTasks() throws IOException {
    java.util.SortedMap<Integer, Path> kept = new java.util.TreeMap<>();
    if (resumes == null) {
      return kept;
    }
    for (Path set : records(".pendingset")) {
      String n = set.getName();
      int index = RenameCommit.taskIndex(n.substring(0, n.length() - ".pendingset".length()));
      if (index >= 0 && kept.put(index, set) != null) {
        dropRecord(kept.remove(index));
        dropRecord(set);
      }
    }
    return kept;
  }

  private void dropRecord(Path set) throws IOException {
    for (String[] u : uploads(fs, set)) {
      S3aUploads.abort(fs, u[0], u[1]);
    }
    fs.delete(set, false);
  }

  @Override
  public void dropTask(int index) throws IOException {
    Path set = keptTasks().get(index);
    if (set != null) {
      dropRecord(set);
    }
  }

  /** The output itself: the tasks' files are uncompleted uploads under it until {@link #publish}. */
  @Override
  public Path staging() {
    return output;
  }

  @Override
  public void configure(Configuration jobConf) {
    jobConf.set(io.volpool.spark.VolpoolOutputFormat.COMMIT, io.volpool.spark.VolpoolOutputFormat.OBJECT_STORE);
    configure(jobConf, id);
  }

  @Override
  public Path publish(Configuration jobConf) throws IOException {
    CommitGate.enter();
    boolean done = false;
    try {
      Path p = publishNow(jobConf);
      done = true;
      return p;
    } finally {
      if (!done) {
        CommitGate.failed();
      }
    }
  }

  private Path publishNow(Configuration jobConf) throws IOException {
    lock.acquire();
    if (append) {
      // the output as this run planned against it: another run's append since is refused, before anything completes
      checkAppendBase();
    }
    if (exists(fs, output) && append) {
      // an appending run's files join the output as their uploads complete (one by one: S3 has no folder to swap);
      // its manifest, written last, says they are in. What the output held before is listed, so a failure takes out
      // only this run's files
      appendedTo = dataFiles();
      LOG.info("volpool: adding this run's files to {} (mode=append)", output);
    } else if (exists(fs, output)) {
      if (!overwrite) {
        throw new ConcurrentCommitException("output " + output + " appeared while the job ran; this run's uploads were"
            + " not completed");
      }
      // no rename on S3 (it would copy): the old output is deleted, then the new one committed; runs' upload
      // records (this run's, and a concurrent one's, which then fails at the lock) stay
      for (FileStatus st : fs.listStatus(output)) {
        if (!st.getPath().getName().startsWith(MAGIC)) {
          fs.delete(st.getPath(), true);
        }
      }
      LOG.info("volpool: deleted the old output {} (mode=overwrite) before committing this run's", output);
    }
    committing = true;
    commitJob(output, jobConf, id);
    published = true;
    Path magic = magicDir(output, id);
    if (fs.exists(magic)) {
      fs.delete(magic, true);
    }
    return output;
  }

  @Override
  public int committedTaskCount() {
    return -1; // pending sets under the magic folder; not counted before the commit
  }

  @Override
  public void commit() throws IOException {
    if (!published) {
      throw new IllegalStateException("commit before publish of " + output);
    }
    lock.release();
    // the output is committed: what is left is cleanup, which the next run on the output also does
    try {
      owner.remove();
      fs.delete(new Path(output.getParent(), manifestName(output, id)), false);
    } catch (IOException | RuntimeException e) {
      LOG.warn("volpool: the output {} is committed; cleaning up after it failed (the next run on it does): {}", output,
          e.toString());
    }
  }

  @Override
  public void abort(String keepWhy) {
    if (keepWhy != null && !committing) {
      // the committed tasks' uploads stay (not completed, so invisible) for the next resume
      owner.markEnded(keepWhy);
      if (lock.held()) {
        lock.release();
      }
      return;
    }
    abort();
  }

  @Override
  public void abort() {
    owner.stop();
    try {
      // the uploads not completed yet (all of them unless the job commit began)
      abortUploads(fs, output, id);
      if (committing && appendedTo != null) {
        // an append's files completed into an output that holds others' too: only this run's go
        int removed = 0;
        for (Path f : dataFiles()) {
          if (!appendedTo.contains(f)) {
            fs.delete(f, false);
            removed++;
          }
        }
        LOG.warn("volpool: removed the {} file(s) this appending run had completed into {}; the output is as before it",
            removed, output);
      } else if (committing) {
        // the commit made files visible (all of them, or some before it failed), and the output held nothing
        // else (it did not exist, or its old files were deleted under the lock): they are not an output
        fs.delete(output, true);
        LOG.warn("volpool: deleted {}, which this run {} committed", output, published ? "had" : "had partly");
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("volpool: could not clean up the uploads of run {} on {} (the next run on it will): {}", id, output,
          e.toString());
    }
    if (lock.held()) {
      lock.release();
    }
    owner.remove();
    try {
      fs.delete(new Path(output.getParent(), manifestName(output, id)), false);
    } catch (IOException e) {
      LOG.warn("could not delete the manifest of run {}: {}", id, e.toString());
    }
  }

  /**
   * On S3: aborts the uploads of runs on {@code out} that are not alive (their owner file says so),
   * and of magic folders whose run left no owner file, and deletes their folders and owner files.
   */
  static int removeDeadUploads(FileSystem fs, Path out) throws IOException {
    return removeDeadUploads(fs, out, null);
  }

  /** The same, but for run {@code keep}'s (null: none), which a resumed run takes over; also dead runs' manifests. */
  static int removeDeadUploads(FileSystem fs, Path out, String keep) throws IOException {
    Path parent = out.getParent();
    if (parent == null || !fs.exists(parent)) {
      return 0;
    }
    String prefix = "." + out.getName() + STAGING;
    int removed = 0;
    int alive = 0;
    java.util.Set<String> owned = new java.util.HashSet<>();
    for (FileStatus st : fs.listStatus(parent)) {
      String n = st.getPath().getName();
      if (!n.startsWith(prefix) || !n.endsWith(".owner")) {
        continue;
      }
      String runId = n.substring(prefix.length(), n.length() - ".owner".length());
      owned.add(runId);
      if (runId.equals(keep)) {
        continue;
      }
      try {
        Optional<String> why = RunOwner.deadBecause(fs, st, st.getPath());
        if (why.isPresent()) {
          LOG.warn("volpool: aborting the uploads of run {} on {}, which is not alive ({})", runId, out, why.get());
          abortUploads(fs, out, runId);
          fs.delete(st.getPath(), false);
          fs.delete(new Path(parent, manifestName(out, runId)), false);
          removed++;
        } else {
          alive++;
        }
      } catch (java.io.FileNotFoundException e) {
        // that run finished while we looked
      }
    }
    if (fs.exists(out) && fs.getFileStatus(out).isDirectory()) {
      for (FileStatus st : fs.listStatus(out)) {
        String n = st.getPath().getName();
        if (n.startsWith(MAGIC) && !owned.contains(n.substring(MAGIC.length()))
            && fs.exists(st.getPath())) {
          String runId = n.substring(MAGIC.length());
          LOG.warn("volpool: aborting the uploads of run {} on {}, which left no owner file", runId, out);
          abortUploads(fs, out, runId);
          removed++;
        }
      }
    }
    if (removed > 0 && alive == 0) {
      // no live run writes to this output: an upload a dead task had not finished (so never recorded) is
      // found only by listing the uploads under the output
      int n = S3aUploads.abortUnder(fs, out);
      if (n < 0) {
        LOG.warn("volpool: the store cannot list multipart uploads (ListMultipartUploads), so a file a dead run's task"
            + " was still writing stays an uncompleted upload under {}: invisible to readers but stored until a bucket"
            + " lifecycle rule (AbortIncompleteMultipartUpload) or `hadoop s3guard uploads -abort -force {}` removes it",
            out, out);
      } else if (n > 0) {
        LOG.warn("volpool: aborted {} more uncompleted upload(s) under {} that no run recorded (files dead tasks were"
            + " still writing)", n, out);
      }
    }
    return removed;
  }

  /**
   * Whether an output of this scheme is refused whatever else holds: an object store other than
   * s3a://, where volpool has no commit that does not rename. (An s3a:// output may still be refused
   * by {@link #requireSafe}, for its bucket or class path.)
   */
  public static boolean refusedScheme(String scheme) {
    String s = scheme.toLowerCase(Locale.ROOT);
    return OBJECT_STORES.contains(s) && !s.equals("s3a");
  }

  /** Whether {@code fs} is an object store that volpool commits to with {@link MagicCommit}. */
  public static boolean applies(FileSystem fs) {
    return "s3a".equals(fs.getUri().getScheme()); // getUri: the raw local filesystem has no getScheme()
  }

  private static String scheme(Path p, Configuration conf) {
    String s = p.toUri().getScheme() != null ? p.toUri().getScheme() : FileSystem.getDefaultUri(conf).getScheme();
    return s == null ? "file" : s.toLowerCase(Locale.ROOT);
  }

  /**
   * Refuses an output whose filesystem volpool cannot commit to safely, before any work: an object
   * store other than {@code s3a://} (a commit there would rename, which is a copy and a delete), an
   * s3a bucket whose magic committer is switched off, or S3A that is not on the class path.
   *
   * @throws SettingsException naming the output, the rule and what to do
   */
  public static void requireSafe(String output, Configuration conf) {
    Path out = new Path(output);
    String scheme = scheme(out, conf);
    if (!OBJECT_STORES.contains(scheme)) {
      return;
    }
    if (!refusedScheme(scheme)) {
      requireMagic(output, out, conf);
      return;
    }
    if (scheme.equals("s3") || scheme.equals("s3n")) {
      throw new SettingsException(VolpoolOptions.OUTPUT.key() + "=" + output + ": write to S3 through s3a:// (Hadoop's S3A"
          + " connector, whose magic committer volpool commits with); " + scheme + ":// has no safe commit here");
    }
    throw new SettingsException(VolpoolOptions.OUTPUT.key() + "=" + output + " is on an object store (" + scheme
        + "://), where volpool has no safe commit: a rename there is a copy and a delete, neither atomic nor exclusive,"
        + " so a failed or concurrent run could leave a partial output that looks complete. Write to s3a:// (S3A's magic"
        + " committer), HDFS or a shared filesystem and copy it with `hadoop distcp`; input from " + scheme + ":// works");
  }

  /** Refuses an s3a:// output whose bucket has the magic committer off, or where S3A is not on the class path. */
  private static void requireMagic(String output, Path out, Configuration conf) {
    FileSystem fs;
    try {
      fs = out.getFileSystem(conf);
    } catch (IOException | RuntimeException e) {
      throw new SettingsException(VolpoolOptions.OUTPUT.key() + "=" + output + ": S3A is not usable here (" + e
          + "); an s3a:// output needs org.apache.hadoop:hadoop-aws:3.4.1 and the AWS SDK bundle it declares"
          + " (software.amazon.awssdk:bundle:2.24.6) on the driver's and executors' class path, e.g. spark-submit"
          + " --packages org.apache.hadoop:hadoop-aws:3.4.1 (docs/storage.md)", e);
    }
    boolean magic;
    try {
      magic = fs.hasPathCapability(out, MAGIC_CAPABILITY);
    } catch (IOException e) {
      throw new SettingsException(VolpoolOptions.OUTPUT.key() + "=" + output + ": cannot reach the bucket: " + e, e);
    }
    if (!magic) {
      throw new SettingsException(VolpoolOptions.OUTPUT.key() + "=" + output + ": S3A's magic committer is switched off"
          + " for this bucket (fs.s3a.committer.magic.enabled=false, or fs.s3a.bucket.BUCKET.committer.magic.enabled),"
          + " and volpool commits to S3 only through it: any other commit renames, which on S3 copies and deletes, so a"
          + " failed run could leave a partial output. Enable it (the default since Hadoop 3.3.5)");
    }
  }

  /** The magic committer's folder of run {@code id} under {@code out}. */
  public static Path magicDir(Path out, String id) {
    return new Path(out, MAGIC + id);
  }

  /** Sets the magic committer for run {@code id} in a job's configuration (tasks and the driver's commit read it). */
  static void configure(Configuration c, String id) {
    c.set("mapreduce.outputcommitter.factory.scheme.s3a", "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory");
    c.set("fs.s3a.committer.name", "magic");
    // the job's folder is __magic_job-<id>, so a later run can find this run's uploads by its owner file
    c.set("fs.s3a.committer.uuid", id);
    c.setBoolean("fs.s3a.committer.require.uuid", true);
    // the committer's own cleanup lists every upload under the output to abort it: a store may lack that
    // listing (s3proxy does), and it would also abort a concurrent run's; a failed run's uploads are aborted
    // from its own records instead (abortUploads)
    c.setBoolean("fs.s3a.committer.abort.pending.uploads", false);
  }

  /** A task attempt context of the driver's own for job-level calls on the committer. */
  private static TaskAttemptContextImpl driverContext(Configuration jobConf, String id) {
    JobID job = new JobID("volpool" + Integer.toHexString(id.hashCode()), 0);
    return new TaskAttemptContextImpl(jobConf, new TaskAttemptID(new TaskID(job, TaskType.JOB_SETUP, 0), 0));
  }

  private static OutputCommitter committer(Path out, TaskAttemptContextImpl ctx) throws IOException {
    return PathOutputCommitterFactory.getCommitterFactory(out, ctx.getConfiguration()).createOutputCommitter(out, ctx);
  }

  /** Completes the uploads of every committed task of run {@code id}: its files appear in {@code out}. */
  static void commitJob(Path out, Configuration jobConf, String id) throws IOException {
    TaskAttemptContextImpl ctx = driverContext(jobConf, id);
    committer(out, ctx).commitJob(ctx);
  }

  /**
   * Aborts the multipart uploads of run {@code id} on {@code out} found in its magic folder (the
   * {@code .pending} record of each file a task wrote, the {@code .pendingset} of each committed
   * task), then deletes the folder. Uploads already completed or aborted are passed over.
   *
   * @return the uploads aborted
   */
  static int abortUploads(FileSystem fs, Path out, String id) throws IOException {
    Path dir = magicDir(out, id);
    List<String[]> uploads = new ArrayList<>();
    if (fs.exists(dir)) {
      RemoteIterator<LocatedFileStatus> it = fs.listFiles(dir, true);
      while (it.hasNext()) {
        Path p = it.next().getPath();
        String n = p.getName();
        if (!n.endsWith(".pending") && !n.endsWith(".pendingset")) {
          continue;
        }
        try {
          uploads.addAll(uploads(fs, p));
        } catch (IOException e) {
          LOG.warn("volpool: cannot read the upload record {} of run {}: {}", p, id, e.toString());
        }
      }
    }
    int aborted = 0;
    for (String[] u : uploads) {
      if (S3aUploads.abort(fs, u[0], u[1])) {
        aborted++;
      }
    }
    if (fs.exists(dir)) {
      fs.delete(dir, true);
    }
    if (!uploads.isEmpty()) {
      LOG.warn("volpool: aborted {} of {} uncompleted upload(s) of run {} under {} (the rest were done already)", aborted,
          uploads.size(), id, out);
    }
    return aborted;
  }
}
