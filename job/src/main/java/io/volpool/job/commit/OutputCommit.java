package io.volpool.job.commit;

import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
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
  /** The infix of a run's staging folder and owner file beside the output: {@code .NAME.volpool-staging-ID}. */
  static final String STAGING = ".volpool-staging-";

  final FileSystem fs;
  final Path output;
  final boolean overwrite;
  /** The run's id: its staging folder's suffix, and on S3 its magic committer's job. */
  final String id;
  final CommitLock lock;
  final RunOwner owner;

  OutputCommit(FileSystem fs, Path output, String id, boolean overwrite, Path staging, boolean rewriteToTouch)
      throws IOException {
    this.fs = fs;
    this.output = output;
    this.id = id;
    this.overwrite = overwrite;
    this.lock = new CommitLock(fs, output, id, staging.getName(), rewriteToTouch);
    this.owner = new RunOwner(fs, output, id, rewriteToTouch, lock);
  }

  /**
   * Checks the output path against the mode, removes what dead runs on this output left (their staging,
   * their uploads, a replace they did not finish, their lock) and picks the strategy for its filesystem.
   *
   * @throws SettingsException when the output exists and {@code overwrite} is false
   */
  public static OutputCommit prepare(String output, boolean overwrite, Configuration conf) throws IOException {
    Path out = new Path(output);
    FileSystem fs = out.getFileSystem(conf);
    out = fs.makeQualified(out);
    boolean magic = MagicCommit.applies(fs);
    if (out.getParent() != null && fs.exists(out.getParent())) {
      // a run killed in the middle of replacing this output: finish or undo its replace before looking at the output
      if (!magic) {
        RenameCommit.recoverReplaced(fs, out);
      }
      CommitLock.check(fs, out);
    }
    if (magic) {
      // before the existence check: a dead run's upload folder inside the output is not an output
      MagicCommit.removeDeadUploads(fs, out);
    }
    if (exists(fs, out) && !overwrite) {
      throw new SettingsException("output " + out + " already exists; set " + VolpoolOptions.MODE.key() + "=overwrite"
          + " to replace it, or choose another " + VolpoolOptions.OUTPUT.key());
    }
    Path parent = out.getParent();
    if (parent != null && !fs.exists(parent)) {
      fs.mkdirs(parent);
    }
    String id = UUID.randomUUID().toString();
    if (magic) {
      return new MagicCommit(fs, out, id, overwrite);
    }
    RenameCommit.removeDeadStaging(fs, out);
    return new RenameCommit(fs, out, id, overwrite);
  }

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

  @Override
  public void close() {
    owner.stop();
  }
}
