package io.volpool.job.commit;

import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * How a run's output is published: the one commit protocol, with a strategy per kind of filesystem.
 * Tasks write where {@link #staging} says; once every task succeeded, {@link #publish} makes their
 * files countable (and returns where they are), the job checks them, and {@link #commit} puts them in
 * place; after any failure {@link #abort} removes what the run staged. A failed or killed run never
 * leaves something that looks like a complete output.
 *
 * <ul>
 *   <li>{@link RenameCommit} (local, shared and HDFS filesystems): a hidden staging folder beside the
 *       output, renamed to it at the commit.
 *   <li>{@link MagicCommit} ({@code s3a://}): S3A's magic committer; the tasks' files are uncompleted
 *       uploads until {@link #publish} completes them.
 * </ul>
 *
 * <p>The parts both share: the run's owner file and heartbeat ({@link RunOwner}), by which a later run
 * tells a live run from a dead one and removes only a dead one's staging (in {@link #prepare}), and the
 * output's commit lock ({@link CommitLock}), held while the output changes. Failures that leave the
 * output as it was are {@link CommitFailure}s.
 */
public abstract sealed class OutputCommit implements AutoCloseable permits RenameCommit, MagicCommit {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(OutputCommit.class);
  /** The infix of a run's staging folder and owner file beside the output: {@code .NAME.volpool-staging-ID}. */
  static final String STAGING = ".volpool-staging-";
  /** The suffix of a run's manifest beside the output ({@code .NAME.volpool-staging-ID.manifest.json}). */
  static final String MANIFEST = ".manifest.json";

  final FileSystem fs;
  final Path output;
  final boolean overwrite;
  /** The run's id: its staging folder's suffix, and on S3 its magic committer's job. */
  final String id;
  final CommitLock lock;
  final RunOwner owner;
  /** The earlier run whose committed tasks this one keeps ({@code mode=resume}), or null. */
  final String resumes;
  /** The run adds its files to the output ({@code mode=append}) rather than making or replacing it. */
  final boolean append;
  /**
   * A failed run keeps its committed tasks for the next resume, whatever its mode but append: Spark's job abort must
   * not remove them (the driver decides, {@link #abort(String)}).
   */
  final boolean keepCommitted;
  /**
   * Under append: the runs the output's manifest named when this run planned (empty: no output then, null: not
   * set). The commit re-reads the manifest under the lock and refuses when another run changed it since.
   */
  private List<String> appendBase;

  OutputCommit(FileSystem fs, Path output, String id, boolean overwrite, Path staging, boolean rewriteToTouch,
      String resumes, io.volpool.conf.OutputMode mode) throws IOException {
    this.fs = fs;
    this.append = mode == io.volpool.conf.OutputMode.APPEND;
    this.keepCommitted = mode != io.volpool.conf.OutputMode.APPEND;
    this.output = output;
    this.id = id;
    this.overwrite = overwrite;
    this.resumes = resumes;
    this.lock = new CommitLock(fs, output, id, staging.getName(), rewriteToTouch);
    this.owner = new RunOwner(fs, output, id, rewriteToTouch, lock, overwrite);
  }

  /**
   * Checks the output path against the mode, removes what dead runs on this output left (their staging,
   * their uploads, a replace they did not finish, their lock) and picks the strategy for its filesystem.
   *
   * @throws SettingsException when the output exists and {@code overwrite} is false
   */
  public static OutputCommit prepare(String output, boolean overwrite, Configuration conf) throws IOException {
    return prepare(output, overwrite ? io.volpool.conf.OutputMode.OVERWRITE : io.volpool.conf.OutputMode.ERRORIFEXISTS,
        conf, null);
  }

  /**
   * As above for {@code mode}; under {@code resume}, a dead run on this output whose manifest has the
   * fingerprint of {@code manifest} (the same settings and input) is taken over: its committed tasks are
   * kept ({@link #keptTasks}) and this run commits them with its own. The manifest is written beside the
   * output (and into it at the commit) so a later run can tell.
   *
   * @throws SettingsException when the output exists (and the mode neither replaces nor adds to it), or when
   *     {@code resume} finds a dead run on this output made with other settings or input, naming what changed
   */
  public static OutputCommit prepare(String output, io.volpool.conf.OutputMode mode, Configuration conf,
      RunManifest manifest) throws IOException {
    boolean overwrite = mode == io.volpool.conf.OutputMode.OVERWRITE;
    boolean resume = mode == io.volpool.conf.OutputMode.RESUME;
    Path out = new Path(output);
    // local files through the raw filesystem: the checksum layer fails on names holding ':' (.npy files named by id)
    FileSystem fs = io.volpool.io.Files2.fs(out, conf);
    out = fs.makeQualified(out);
    boolean magic = MagicCommit.applies(fs);
    if (out.getParent() != null && fs.exists(out.getParent())) {
      // a run killed in the middle of replacing this output: finish or undo its replace before looking at the output
      if (!magic) {
        RenameCommit.recoverReplaced(fs, out);
      }
      CommitLock.check(fs, out);
    }
    // under resume: the newest dead run of the same fingerprint, whose committed tasks this run keeps
    String resumes = resume && manifest != null && out.getParent() != null && fs.exists(out.getParent())
        ? adoptable(fs, out, manifest) : null;
    if (magic) {
      // before the existence check: a dead run's upload folder inside the output is not an output
      MagicCommit.removeDeadUploads(fs, out, resumes);
    }
    if (resume && resumes == null && manifest != null) {
      LOG.info("volpool: {}=resume: no unfinished run on {} with these settings and input; every task runs",
          VolpoolOptions.MODE.key(), out);
    }
    if (resume && resumes != null && exists(fs, out) && RunOwner.replaces(fs, RunOwner.of(out, resumes))) {
      // the run resumed was replacing the output (mode=overwrite): this one finishes it, so it replaces it too
      overwrite = true;
      LOG.info("volpool: run {} was replacing {} (mode=overwrite); this run resumes it and replaces the output at its"
          + " commit", resumes, out);
    }
    if (exists(fs, out) && !overwrite && mode != io.volpool.conf.OutputMode.APPEND) {
      if (resume) {
        RunManifest done = RunManifest.read(fs, out);
        throw new SettingsException("output " + out + " already exists" + (done == null ? " and has no "
            + RunManifest.FILE + " (it was not written by this version of volpool)" : ", made with other settings or"
            + " input: " + String.join("; ", manifest.differences(done, 5))) + "; there is nothing of it to resume. Set "
            + VolpoolOptions.MODE.key() + "=overwrite to replace it, or choose another " + VolpoolOptions.OUTPUT.key());
      }
      throw new SettingsException("output " + out + " already exists; set " + VolpoolOptions.MODE.key() + "=overwrite"
          + " to replace it, or choose another " + VolpoolOptions.OUTPUT.key());
    }
    Path parent = out.getParent();
    if (parent != null && !fs.exists(parent)) {
      fs.mkdirs(parent);
    }
    String id = resumes != null ? resumes : UUID.randomUUID().toString();
    OutputCommit c;
    if (magic) {
      c = new MagicCommit(fs, out, id, overwrite, resumes, mode);
    } else {
      RenameCommit.removeDeadStaging(fs, out, resumes);
      c = new RenameCommit(fs, out, id, overwrite, resumes, mode);
    }
    if (resumes != null) {
      c.resumedManifest = RunManifest.read(fs, out.getParent(), manifestName(out, resumes));
    }
    if (manifest != null) {
      manifest.write(fs, out.getParent(), manifestName(out, id));
    }
    return c;
  }

  /**
   * Removes what dead runs left beside an output that is complete (a run killed after its output landed and
   * before it removed its owner file, manifest or the old output it replaced), touching no live run's files: what
   * {@link #prepare} removes before a run, for a run that finds nothing to do.
   */
  public static void removeDeadLeftovers(String output, Configuration conf) throws IOException {
    Path out = new Path(output);
    FileSystem fs = io.volpool.io.Files2.fs(out, conf);
    out = fs.makeQualified(out);
    if (out.getParent() == null || !fs.exists(out.getParent())) {
      return;
    }
    if (MagicCommit.applies(fs)) {
      MagicCommit.removeDeadUploads(fs, out, null);
    } else {
      RenameCommit.recoverReplaced(fs, out);
      RenameCommit.removeDeadStaging(fs, out, null);
    }
    // and the commit lock of a run killed after its output was back in place, before it released it
    CommitLock.check(fs, out);
  }

  /**
   * Finishes or undoes what a dead run left half done on {@code output} (an overwrite or an append killed
   * between its renames): called before the output is looked at, so a run never plans against an output
   * that is moved aside. Never touches a live run's files.
   */
  public static void recover(String output, Configuration conf) throws IOException {
    Path out = new Path(output);
    FileSystem fs = io.volpool.io.Files2.fs(out, conf);
    out = fs.makeQualified(out);
    if (out.getParent() != null && fs.exists(out.getParent()) && !MagicCommit.applies(fs)) {
      RenameCommit.recoverReplaced(fs, out);
    }
  }

  /**
   * An appending run planned against {@code existing} (the output's manifest then; null: no output then): what
   * the commit expects to find under the lock.
   */
  public void appendingTo(RunManifest existing, java.util.Set<String> added) {
    appendBase = existing == null ? List.of() : List.copyOf(existing.runs());
    appendExisting = existing;
    appendAdded = java.util.Set.copyOf(added);
  }

  private RunManifest appendExisting;
  private java.util.Set<String> appendAdded;

  /**
   * Under the lock, before an append changes the output: refuses when another run made, replaced or added to
   * the output since this run planned, since this run's files were chosen by the output's manifest then and
   * would be added twice or beside files that replaced them.
   *
   * @throws ConcurrentCommitException naming both states and what to do
   */
  void checkAppendBase() throws IOException {
    if (appendBase == null) {
      return;
    }
    boolean there = exists(fs, output);
    RunManifest now = there ? RunManifest.read(fs, output) : null;
    List<String> runsNow = now == null ? List.of() : now.runs();
    boolean same = appendBase.isEmpty() ? !there : there && runsNow.equals(appendBase);
    if (!same) {
      throw new ConcurrentCommitException("another run changed " + output + " while this appending run ran (planned"
          + " against " + (appendBase.isEmpty() ? "no output" : "run(s) " + String.join(", ", appendBase)) + "; the"
          + " output now " + (!there ? "is gone" : now == null ? "has no manifest" : "holds run(s) "
          + String.join(", ", runsNow)) + "); nothing of this run was added, so no volume is in it twice",
          "rerun the same command (" + VolpoolOptions.MODE.key() + "=append) once the other run has finished: it adds"
          + " the input the output still lacks");
    }
    if (appendExisting != null) {
      // under the lock, on the output as planned: what an older version's append that did not finish left in it
      Appending.removeUnfinished(fs, output, appendExisting, appendAdded);
    }
  }

  /** The name of run {@code id}'s manifest beside output {@code out}. */
  static String manifestName(Path out, String id) {
    return "." + out.getName() + STAGING + id + MANIFEST;
  }

  /**
   * The id of the newest run on {@code out} that is not alive and whose manifest has {@code manifest}'s
   * fingerprint; null when there is none.
   *
   * @throws SettingsException when dead runs left work but every one was made with other settings or input
   */
  static String adoptable(FileSystem fs, Path out, RunManifest manifest) throws IOException {
    String prefix = "." + out.getName() + STAGING;
    String best = null;
    long bestTime = Long.MIN_VALUE;
    List<String> other = new java.util.ArrayList<>();
    for (FileStatus st : fs.listStatus(out.getParent())) {
      String n = st.getPath().getName();
      if (!n.startsWith(prefix) || !n.endsWith(MANIFEST)) {
        continue;
      }
      String runId = n.substring(prefix.length(), n.length() - MANIFEST.length());
      Path ownerFile = RunOwner.of(out, runId);
      try {
        if (RunOwner.deadBecause(fs, st, ownerFile).isEmpty()) {
          continue; // a live run's: not this run's to take
        }
        RunManifest m;
        try {
          m = RunManifest.read(fs, out.getParent(), n);
        } catch (IOException e) {
          continue; // unreadable: the dead run's cleanup removes it
        }
        if (m == null) {
          continue; // it finished or was removed while we looked
        }
        if (m.fingerprint().equals(manifest.fingerprint())) {
          if (st.getModificationTime() > bestTime) {
            best = runId;
            bestTime = st.getModificationTime();
          }
        } else {
          other.add("run " + runId + ": " + String.join("; ", manifest.differences(m, 5)));
        }
      } catch (java.io.FileNotFoundException e) {
        // it finished or was removed while we looked
      }
    }
    if (best == null && !other.isEmpty()) {
      throw new SettingsException(VolpoolOptions.MODE.key() + "=resume: the unfinished run(s) on " + out + " were made"
          + " with other settings or input, so their work does not belong to this run (" + String.join(" | ", other)
          + "). Run with the same settings and input to resume, or set " + VolpoolOptions.MODE.key() + "=overwrite to"
          + " start over (which removes their work)");
    }
    return best;
  }

  /** The earlier run this one resumes (its committed tasks are kept), or null for a run from the start. */
  public String resumes() {
    return resumes;
  }

  /** This run's id (a resumed run's is the earlier run's: it takes over its staging). */
  public String id() {
    return id;
  }

  /** The manifest of the run this one resumes, as that run wrote it; null when not resuming. */
  public RunManifest resumedManifest() {
    return resumedManifest;
  }

  private RunManifest resumedManifest;

  /** Replaces this run's manifest beside the output (a resumed run that planned as the earlier run did). */
  public void rewriteManifest(RunManifest m) throws IOException {
    m.write(fs, output.getParent(), manifestName(output, id));
  }

  /** How many tasks of this run have committed so far (-1 when the store cannot tell without its commit). */
  public abstract int committedTaskCount() throws IOException;

  /** Removes every kept task's committed work: a resumed run whose tasks cannot be matched runs them all. */
  public void dropAllTasks() throws IOException {
    for (int i : new java.util.ArrayList<>(keptTasks().keySet())) {
      dropTask(i);
    }
  }

  /**
   * The tasks an earlier run committed that this run keeps, by the index of the task in the plan (their
   * partition in both runs' Spark jobs), each with where its committed files are; empty unless resuming.
   */
  public abstract java.util.SortedMap<Integer, Path> keptTasks() throws IOException;

  /** Removes the committed work of kept task {@code index} (it failed its check): this run runs it again. */
  public abstract void dropTask(int index) throws IOException;

  /**
   * Whether {@code out} is an output: it exists, and on S3 it holds something besides the magic
   * committer's folders of runs (where uncompleted uploads are recorded while a run goes on).
   */
  public static boolean exists(FileSystem fs, Path out) throws IOException {
    if (!fs.exists(out)) {
      return false;
    }
    if (!MagicCommit.applies(fs) || fs.getFileStatus(out).isFile()) {
      return true;
    }
    for (FileStatus st : fs.listStatus(out)) {
      if (!st.getPath().getName().startsWith(MagicCommit.MAGIC)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Refuses an output whose filesystem volpool cannot commit to safely, before any work (see
   * {@link MagicCommit#requireSafe}).
   *
   * @throws SettingsException naming the output, the rule and what to do
   */
  public static void requireSafe(String output, Configuration conf) {
    MagicCommit.requireSafe(output, conf);
  }

  /**
   * Whether the kept task of upload record {@code record} (S3's {@code .pendingset}, {@link #keptTasks}) set bad
   * records aside: its side file is one of its uploads.
   */
  public static boolean setsAside(FileSystem fs, Path record) throws IOException {
    return MagicCommit.uploadsSideFile(fs, record);
  }

  /** Whether an output of this scheme is refused whatever else holds: an object store other than s3a://. */
  public static boolean refusedScheme(String scheme) {
    return MagicCommit.refusedScheme(scheme);
  }

  public Path output() {
    return output;
  }

  /**
   * Where the tasks' committer writes: the staging folder, or on S3 the output itself (its files are
   * uncompleted uploads until {@link #publish}).
   */
  public abstract Path staging();

  /** Sets the commit in the job's configuration, which the tasks' committer and {@link #publish} read. */
  public abstract void configure(Configuration jobConf);

  /**
   * Makes the committed files countable and returns their folder: the staging folder (nothing is
   * visible at the output yet); on S3 the output, after taking its lock, removing an old output under
   * overwrite and completing the tasks' uploads (the job commit that Spark left to the driver).
   *
   * @throws ConcurrentCommitException when another run holds the lock, or the output appeared meanwhile
   */
  public abstract Path publish(Configuration jobConf) throws IOException;

  /** Writes a small text file (e.g. the run summary) into the folder {@link #publish} returned. */
  public void writeText(String name, String text) throws IOException {
    try (OutputStream os = fs.create(new Path(staging(), name), true)) {
      os.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  /**
   * Puts the published output in place (replacing an old output under overwrite) and ends the run's
   * ownership.
   *
   * @throws ConcurrentCommitException when another job holds the lock, or the output appeared meanwhile
   */
  public abstract void commit() throws IOException;

  /** Removes what this run staged after a failure, leaving the output as it was; never throws. */
  public abstract void abort();

  /**
   * After a failure of a run in mode=resume: {@code keepWhy} non-null keeps what its tasks committed for the
   * next resume (the owner file says the run ended, and why); null removes it as {@link #abort()}. Never throws.
   */
  public void abort(String keepWhy) {
    abort();
  }

  @Override
  public void close() {
    owner.stop();
  }
}
