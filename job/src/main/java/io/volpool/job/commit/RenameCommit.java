package io.volpool.job.commit;

import io.volpool.io.Files2;
import java.io.IOException;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit of local, shared and HDFS filesystems: the tasks write into a hidden staging folder beside
 * the output ({@code .NAME.volpool-staging-ID}), which the commit renames to the output under the
 * output's lock. Under overwrite the old output is first moved aside in one rename, so a reader sees
 * the old output, none, or the new one, never a part; a run killed between the two renames has its old
 * output put back by the next run ({@link #recoverReplaced}).
 */
final class RenameCommit extends OutputCommit {
  private static final Logger LOG = LoggerFactory.getLogger(RenameCommit.class);
  static final String REPLACED = ".replaced";

  private final Path staging;

  RenameCommit(FileSystem fs, Path output, String id, boolean overwrite) throws IOException {
    this(fs, output, id, overwrite, null);
  }

  /** A commit of run {@code id}; {@code resumes} (then equal to {@code id}): the dead run whose staging it takes over. */
  RenameCommit(FileSystem fs, Path output, String id, boolean overwrite, String resumes) throws IOException {
    this(fs, output, id, overwrite, new Path(output.getParent(), "." + output.getName() + STAGING + id), resumes);
  }

  private RenameCommit(FileSystem fs, Path output, String id, boolean overwrite, Path staging, String resumes)
      throws IOException {
    super(fs, output, id, overwrite, staging, false, resumes);
    this.staging = staging;
    if (resumes != null) {
      keepCommittedTasksOnly();
    }
  }

  /** Where Hadoop's file committer (algorithm 1, application attempt 0) keeps the committed tasks' folders. */
  private Path committedTasks() {
    return new Path(staging, "_temporary/0");
  }

  /**
   * A taken-over staging holds the committed tasks' folders and the attempts that never committed (a
   * killed run's, under {@code _temporary/0/_temporary}); the latter go, and so does anything a job
   * commit had merged already (the run died in its commit: its tasks are run again rather than sorted out),
   * but the .npy files tasks write in place, which hold the kept tasks' planes.
   */
  private void keepCommittedTasksOnly() throws IOException {
    if (!fs.exists(staging)) {
      return;
    }
    Path attempts = new Path(committedTasks(), "_temporary");
    if (fs.exists(attempts)) {
      fs.delete(attempts, true);
    }
    for (FileStatus st : fs.listStatus(staging)) {
      // kept too: the .npy files the committed tasks wrote their planes into in place
      if (!st.getPath().getName().equals("_temporary")
          && !st.getPath().getName().equals(io.volpool.io.npy.NpyPlanesInPlace.FILES)) {
        LOG.warn("volpool: {} holds {} from a job commit the resumed run did not finish; removed, its tasks run again",
            staging, st.getPath().getName());
        fs.delete(st.getPath(), true);
      }
    }
  }

  @Override
  public java.util.SortedMap<Integer, Path> keptTasks() throws IOException {
    java.util.SortedMap<Integer, Path> kept = new java.util.TreeMap<>();
    if (resumes == null || !fs.exists(committedTasks())) {
      return kept;
    }
    for (FileStatus st : fs.listStatus(committedTasks())) {
      int index = taskIndex(st.getPath().getName());
      if (st.isDirectory() && index >= 0) {
        if (kept.put(index, st.getPath()) != null) {
          // two committed folders of one task (two runs before this one): neither is trusted, it runs again
          fs.delete(kept.remove(index), true);
          fs.delete(st.getPath(), true);
        }
      }
    }
    return kept;
  }

  /** The task number of a committed task's folder ({@code task_<job>_r_000012}: 12), or -1. */
  static int taskIndex(String name) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("task_.*_[rm]_(\\d{6,})").matcher(name);
    return m.matches() ? Integer.parseInt(m.group(1)) : -1;
  }

  @Override
  public void dropTask(int index) throws IOException {
    Path dir = keptTasks().get(index);
    if (dir != null) {
      fs.delete(dir, true);
    }
  }

  @Override
  public Path staging() {
    return staging;
  }

  @Override
  public void configure(Configuration jobConf) {
    jobConf.set(io.volpool.spark.VolpoolOutputFormat.COMMIT, io.volpool.spark.VolpoolOutputFormat.RENAME);
    jobConf.setBoolean(io.volpool.spark.VolpoolOutputFormat.KEEP_COMMITTED, keepCommitted);
  }

  @Override
  public Path publish(Configuration jobConf) throws IOException {
    if (!fs.exists(staging)) {
      fs.mkdirs(staging);
    }
    return staging;
  }

  @Override
  public void commit() throws IOException {
    if (!fs.exists(staging)) {
      fs.mkdirs(staging);
    }
    lock.acquire();
    Path old = null;
    try {
      if (append && fs.exists(output)) {
        appendToOutput();
        return;
      }
      if (fs.exists(output)) {
        if (!overwrite) {
          throw new ConcurrentCommitException("output " + output + " appeared while the job ran (another run committed"
              + " it); this run's result was discarded and the output is the other run's. Rerun with "
              + io.volpool.conf.VolpoolOptions.MODE.key() + "=overwrite to replace it");
        }
        // move the old output aside in one rename, so a reader sees the old output, none, or the new one: never a part
        old = new Path(staging.getParent(), staging.getName() + REPLACED);
        if (!fs.rename(output, old)) {
          throw new IOException("could not move the old output " + output + " aside (mode=overwrite); the new result"
              + " stays in " + staging);
        }
      }
      if (fs.exists(output)) {
        throw new ConcurrentCommitException("output " + output + " reappeared while this job replaced it");
      }
      if (!fs.rename(staging, output)) {
        if (old != null && !fs.exists(output) && fs.rename(old, output)) {
          old = null; // the old output is back in place
        }
        throw new IOException("could not rename " + staging + " to " + output + (old == null ? "" : "; the old output"
            + " stays in " + old));
      }
    } finally {
      lock.release();
    }
    if (old != null) {
      fs.delete(old, true);
    }
    owner.remove();
    fs.delete(new Path(output.getParent(), manifestName(output, id)), false);
  }

  /**
   * An appending run's commit, under the lock: the output is moved aside in one rename, this run's files
   * are moved into it (its summary and, last, its manifest replacing the output's), and it is renamed back.
   * A reader sees the old output, none (while the new files are moved in: one rename each), or the new one,
   * never a part; a run killed in between has the old output put back by the next run
   * ({@link #recoverReplaced}), and the files it had moved in, which its manifest does not name, removed
   * by the next append ({@link Appending}).
   */
  private void appendToOutput() throws IOException {
    Path aside = new Path(staging.getParent(), staging.getName() + REPLACED);
    try {
      String clash = clash(staging, output);
      if (clash != null) {
        throw new IOException("the output " + output + " holds " + clash + " already, which this appending run also"
            + " wrote; nothing was added (the run's files stay in " + staging + " until the next run on the output)");
      }
      if (!fs.rename(output, aside)) {
        throw new IOException("could not move the output " + output + " aside to add this run's files; they stay in "
            + staging);
      }
      try {
        Path manifest = new Path(staging, RunManifest.FILE);
        for (FileStatus st : fs.listStatus(staging)) {
          if (!st.getPath().equals(manifest)) {
            moveInto(st, aside);
          }
        }
        if (fs.exists(manifest)) {
          moveInto(fs.getFileStatus(manifest), aside);
        }
      } finally {
        // back in place, whatever happened: files moved in before a failure are not in its manifest, so the next
        // append removes them
        if (!fs.rename(aside, output)) {
          throw new IOException("could not move " + aside + " back to " + output + " (the next run on it will)");
        }
      }
      fs.delete(staging, true);
    } finally {
      lock.release();
    }
    owner.remove();
    fs.delete(new Path(output.getParent(), manifestName(output, id)), false);
  }

  /** The first file below {@code from} (relative) that folder {@code dir} holds too, but for the run's summary and manifest; null if none. */
  private String clash(Path from, Path dir) throws IOException {
    for (FileStatus st : fs.listStatus(from)) {
      Path target = Files2.child(dir, st.getPath().getName());
      if (!fs.exists(target)) {
        continue;
      }
      if (st.isDirectory()) {
        String c = clash(st.getPath(), target);
        if (c != null) {
          return st.getPath().getName() + "/" + c;
        }
      } else if (!replaceable(target.getName())) {
        return target.getName();
      }
    }
    return null;
  }

  /** Moves {@code from} into folder {@code dir}: a file by a rename (the run's summary and manifest replace the old ones), a folder merged. */
  private void moveInto(FileStatus from, Path dir) throws IOException {
    Files2.merge(fs, from, dir, existing -> {
      if (!replaceable(existing.getName())) {
        throw new IOException("the output holds " + existing + " already, which this appending run also wrote; nothing"
            + " of it was replaced (the run's files stay in " + staging + ")");
      }
    });
  }

  /** Whether an appending run's file of this name replaces the output's: its summary, manifest and success marker. */
  private static boolean replaceable(String name) {
    return name.equals(RunManifest.FILE) || name.equals("_volpool_summary.json") || name.equals("_SUCCESS");
  }

  /**
   * Deletes the staging folder after a failure; never throws. Tasks of the failed stage may
   * still be finishing and writing, so the deletion is retried until the folder stays gone.
   */
  @Override
  public void abort() {
    abort(null);
  }

  /**
   * After a failure: with {@code keepWhy} (a run in mode=resume whose failure left its committed tasks
   * sound), the staging and manifest stay for the next resume and the owner file says the run ended;
   * otherwise as {@link #abort()}.
   */
  @Override
  public void abort(String keepWhy) {
    if (keepWhy != null && fs != null) {
      owner.markEnded(keepWhy);
      return;
    }
    owner.stop();
    for (int attempt = 0; attempt < 20; attempt++) {
      try {
        if (!fs.exists(staging)) {
          Thread.sleep(50);
          if (!fs.exists(staging)) {
            break;
          }
        }
        fs.delete(staging, true);
      } catch (IOException | RuntimeException e) {
        // try again: a task may be writing into it right now
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    owner.remove();
    try {
      fs.delete(new Path(output.getParent(), manifestName(output, id)), false);
    } catch (IOException e) {
      LOG.warn("could not delete the manifest of run {}: {}", id, e.toString());
    }
  }

  /** Removes the staging folders (and owner files) of runs on {@code out} that are no longer alive. */
  static int removeDeadStaging(FileSystem fs, Path out) throws IOException {
    return removeDeadStaging(fs, out, null);
  }

  /**
   * The same, but for run {@code keep}'s (null: none), which a resumed run takes over; also the manifests
   * of dead runs.
   */
  static int removeDeadStaging(FileSystem fs, Path out, String keep) throws IOException {
    String prefix = "." + out.getName() + STAGING;
    int removed = 0;
    for (FileStatus st : fs.listStatus(out.getParent())) {
      String n = st.getPath().getName();
      if (!n.startsWith(prefix) || n.endsWith(".owner") || n.endsWith(MANIFEST)) {
        continue;
      }
      if (keep != null && (n.equals(prefix + keep) || n.startsWith(prefix + keep + "."))) {
        continue;
      }
      if (n.endsWith(REPLACED)) {
        continue; // recoverReplaced decides about old outputs moved aside
      }
      Path ownerFile = new Path(st.getPath().getParent(), n + ".owner");
      try {
        Optional<String> why = RunOwner.deadBecause(fs, st, ownerFile);
        if (why.isPresent()) {
          LOG.warn("volpool: removing {} left by a run that is not alive ({})", st.getPath(), why.get());
          fs.delete(st.getPath(), true);
          fs.delete(ownerFile, false);
          fs.delete(new Path(st.getPath().getParent(), n + MANIFEST), false);
          removed++;
        }
      } catch (java.io.FileNotFoundException e) {
        // that run committed or aborted while we looked
      }
    }
    // owner files whose staging folder never appeared (a run killed before its first task wrote), and the
    // manifests of runs that are gone
    for (FileStatus st : fs.listStatus(out.getParent())) {
      String n = st.getPath().getName();
      if (n.startsWith(prefix) && n.endsWith(MANIFEST)) {
        String runId = n.substring(prefix.length(), n.length() - MANIFEST.length());
        Path ownerFile = RunOwner.of(out, runId);
        try {
          if (!runId.equals(keep) && RunOwner.deadBecause(fs, st, ownerFile).isPresent()
              && !fs.exists(new Path(out.getParent(), prefix + runId))) {
            fs.delete(st.getPath(), false);
            fs.delete(ownerFile, false);
          }
        } catch (java.io.FileNotFoundException e) {
          // gone meanwhile
        }
        continue;
      }
      if (n.startsWith(prefix) && n.endsWith(".owner") && !n.equals(prefix + keep + ".owner")) {
        Path dir = new Path(st.getPath().getParent(), n.substring(0, n.length() - ".owner".length()));
        try {
          if (!fs.exists(dir) && RunOwner.deadBecause(fs, st, st.getPath()).isPresent()) {
            fs.delete(st.getPath(), false);
          }
        } catch (java.io.FileNotFoundException e) {
          // gone meanwhile
        }
      }
    }
    return removed;
  }

  /**
   * An old output moved aside ({@code .NAME.volpool-staging-ID.replaced}) by a commit whose run then
   * died: if the new output landed, the old one is deleted; if the run died between its two renames
   * (no output now), the old output is put back, so a kill never loses the output it was replacing.
   * Left alone while its run is alive (it is committing right now).
   */
  static void recoverReplaced(FileSystem fs, Path out) throws IOException {
    String prefix = "." + out.getName() + STAGING;
    for (FileStatus st : fs.listStatus(out.getParent())) {
      String n = st.getPath().getName();
      if (!n.startsWith(prefix) || !n.endsWith(REPLACED)) {
        continue;
      }
      Path ownerFile = new Path(st.getPath().getParent(), n.substring(0, n.length() - REPLACED.length()) + ".owner");
      Optional<String> dead;
      try {
        dead = fs.exists(ownerFile) ? RunOwner.deadBecause(fs, st, ownerFile) : Optional.of("its run finished");
      } catch (java.io.FileNotFoundException e) {
        continue; // its run finished its commit while we looked: it removes what it moved aside itself
      }
      if (dead.isEmpty()) {
        continue;
      }
      if (fs.exists(out)) {
        LOG.warn("volpool: removing {}, the output {} replaced by a run that died before removing it ({})", st.getPath(),
            out, dead.get());
        fs.delete(st.getPath(), true);
      } else if (fs.rename(st.getPath(), out)) {
        LOG.warn("volpool: restored the output {} from {}: a run ({}) moved it aside to replace it and died before its"
            + " new output landed", out, st.getPath(), dead.get());
      }
    }
  }
}
