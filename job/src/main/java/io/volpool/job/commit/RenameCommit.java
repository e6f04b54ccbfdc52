package io.volpool.job.commit;

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
    this(fs, output, id, overwrite, new Path(output.getParent(), "." + output.getName() + STAGING + id));
  }

  private RenameCommit(FileSystem fs, Path output, String id, boolean overwrite, Path staging) throws IOException {
    super(fs, output, id, overwrite, staging, false);
    this.staging = staging;
  }

  @Override
  public Path staging() {
    return staging;
  }

  @Override
  public void configure(Configuration jobConf) {
    jobConf.set(io.volpool.spark.VolpoolOutputFormat.COMMIT, io.volpool.spark.VolpoolOutputFormat.RENAME);
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
  }

  /**
   * Deletes the staging folder after a failure; never throws. Tasks of the failed stage may
   * still be finishing and writing, so the deletion is retried until the folder stays gone.
   */
  @Override
  public void abort() {
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
  }

  /** Removes the staging folders (and owner files) of runs on {@code out} that are no longer alive. */
  static int removeDeadStaging(FileSystem fs, Path out) throws IOException {
    String prefix = "." + out.getName() + STAGING;
    int removed = 0;
    for (FileStatus st : fs.listStatus(out.getParent())) {
      String n = st.getPath().getName();
      if (!n.startsWith(prefix) || n.endsWith(".owner")) {
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
          removed++;
        }
      } catch (java.io.FileNotFoundException e) {
        // that run committed or aborted while we looked
      }
    }
    // owner files whose staging folder never appeared (a run killed before its first task wrote)
    for (FileStatus st : fs.listStatus(out.getParent())) {
      String n = st.getPath().getName();
      if (n.startsWith(prefix) && n.endsWith(".owner")) {
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
