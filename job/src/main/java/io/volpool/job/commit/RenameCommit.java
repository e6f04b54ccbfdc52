package io.volpool.job.commit;

import io.volpool.io.Files2;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
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

  /**
   * A commit of run {@code id} in {@code mode}; {@code resumes} (then equal to {@code id}): the dead run whose staging
   * it takes over.
   */
  RenameCommit(FileSystem fs, Path output, String id, boolean overwrite, String resumes, io.volpool.conf.OutputMode mode)
      throws IOException {
    this(fs, output, id, overwrite, new Path(output.getParent(), "." + output.getName() + STAGING + id), resumes, mode);
  }

  private RenameCommit(FileSystem fs, Path output, String id, boolean overwrite, Path staging, String resumes,
      io.volpool.conf.OutputMode mode) throws IOException {
    super(fs, output, id, overwrite, staging, false, resumes, mode);
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

  @Override
  public int committedTaskCount() throws IOException {
    if (!fs.exists(committedTasks())) {
      return 0;
    }
    int n = 0;
    for (FileStatus st : fs.listStatus(committedTasks())) {
      n += st.isDirectory() && taskIndex(st.getPath().getName()) >= 0 ? 1 : 0;
    }
    return n;
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
    CommitGate.enter();
    boolean done = false;
    try {
      commitNow();
      done = true;
    } finally {
      if (!done) {
        CommitGate.failed();
      }
    }
  }

  private void commitNow() throws IOException {
    if (!fs.exists(staging)) {
      fs.mkdirs(staging);
    }
    lock.acquire();
    Path old = null;
    try {
      // a run that moved the output aside and died while this one ran: its output goes back (or its append is
      // finished) before this commit looks at the output, so it is never taken for missing
      recoverReplaced(fs, output, true);
      if (append) {
        // the output as this run planned against it: another run's append, or first append, since is refused here
        checkAppendBase();
      }
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
        KillPoints.reach(KillPoints.MOVED_ASIDE);
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
      KillPoints.reach(KillPoints.MOVED_IN);
    } finally {
      if (lock.held()) {
        lock.release();
      }
    }
    cleanUpCommitted(old);
  }

  /**
   * After the commit point: removes {@code leftovers} (null ones skipped), the owner file and the manifest beside
   * the output. Never throws: the output is committed, and the next run on it does what is left.
   */
  private void cleanUpCommitted(Path... leftovers) {
    try {
      for (Path p : leftovers) {
        if (p != null) {
          fs.delete(p, true);
        }
      }
      owner.remove();
      fs.delete(new Path(output.getParent(), manifestName(output, id)), false);
    } catch (IOException | RuntimeException e) {
      LOG.warn("volpool: the output {} is committed; cleaning up after it failed (the next run on it does): {}", output,
          e.toString());
    }
  }

  /** The journal of an appending run's commit beside the output: {@code .NAME.volpool-staging-ID.journal}. */
  static Path journal(Path output, String id) {
    return new Path(output.getParent(), "." + output.getName() + STAGING + id + JOURNAL);
  }

  static final String JOURNAL = ".journal";

  /**
   * An appending run's commit, under the lock: the output is moved aside in one rename, this run's data files
   * are moved into it, then its manifest (the commit point: from here on the output holds this run), then its
   * summary and success marker, and the output is renamed back. Before the first move the run writes a journal
   * of the entries it moves in (none of which the output holds: the clash check). A reader sees the old output,
   * none, or the new one, never a part. A failure before the manifest moved takes the moved entries out again;
   * a run killed in between has its work undone (or, past its manifest, finished) by the next run on the output
   * ({@link #recoverReplaced}), before that run looks at the output.
   */
  private void appendToOutput() throws IOException {
    Path aside = new Path(staging.getParent(), staging.getName() + REPLACED);
    Path journal = journal(output, id);
    String clash = clash(staging, output);
    if (clash != null) {
      throw new IOException("the output " + output + " holds " + clash + " already, which this appending run also"
          + " wrote; nothing was added (the run's files stay in " + staging + " until the next run on the output)");
    }
    Path manifest = new Path(staging, RunManifest.FILE);
    List<String> moves = new ArrayList<>();
    for (FileStatus st : fs.listStatus(staging)) {
      if (!replaceable(st.getPath().getName())) {
        moves(st, output, "", moves);
      }
    }
    writeJournal(fs, journal, moves);
    if (!fs.rename(output, aside)) {
      fs.delete(journal, false);
      throw new IOException("could not move the output " + output + " aside to add this run's files; they stay in "
          + staging);
    }
    KillPoints.reach(KillPoints.MOVED_ASIDE);
    Path had = new Path(aside, RunManifest.FILE);
    Path before = manifestBefore(aside, id);
    boolean committed = false;
    Throwable failure = null;
    try {
      for (FileStatus st : fs.listStatus(staging)) {
        if (!replaceable(st.getPath().getName())) {
          moveInto(st, aside);
        }
      }
      KillPoints.reach(KillPoints.MOVED_IN);
      // the manifest replaced by two renames, the output's kept under a name the recovery knows until this run's is in
      if (fs.exists(had) && !fs.rename(had, before)) {
        throw new IOException("could not move the output's manifest " + had + " aside");
      }
      if (!fs.rename(manifest, had)) {
        throw new IOException("could not move this run's manifest " + manifest + " into " + aside);
      }
      committed = true;
      KillPoints.reach(KillPoints.MANIFEST_WRITTEN);
      try {
        fs.delete(before, false);
        for (FileStatus st : fs.listStatus(staging)) {
          moveInto(st, aside);
        }
      } catch (IOException | RuntimeException e) {
        // past the commit point: the output holds this run; its summary or marker is late, not wrong
        LOG.warn("volpool: the append is committed, but its summary or marker could not be moved into {}: {}", output,
            e.toString());
      }
    } catch (IOException | RuntimeException | Error e) {
      failure = e;
    }
    if (!committed) {
      // nothing of this run may stay in the output: its manifest does not name it
      try {
        undo(fs, aside, moves);
        if (fs.exists(before) && !fs.exists(had)) {
          fs.rename(before, had);
        }
      } catch (IOException | RuntimeException e) {
        if (failure != null) {
          failure.addSuppressed(e);
        }
        failure = failure == null ? e : failure;
      }
    }
    // back in place, whatever happened (the lock is held until it is: commitNow releases it)
    if (!fs.rename(aside, output)) {
      IOException back = new IOException("could not move " + aside + " back to " + output + " (the next run on it will)");
      if (failure != null) {
        back.addSuppressed(failure);
      }
      throw back;
    }
    if (failure != null) {
      if (failure instanceof IOException io) {
        throw io;
      }
      if (failure instanceof RuntimeException re) {
        throw re;
      }
      throw (Error) failure;
    }
    KillPoints.reach(KillPoints.MOVED_BACK);
    lock.release();
    cleanUpCommitted(journal, staging);
  }

  /** Where an append keeps the output's manifest while it replaces it: {@code _volpool_manifest.json.before-ID}. */
  static Path manifestBefore(Path dir, String id) {
    return new Path(dir, RunManifest.FILE + ".before-" + id);
  }

  /**
   * The entries that moving {@code from} into folder {@code dir} adds there, by path relative to the output
   * ({@code prefix}), as {@link Files2#merge} moves them: a file, or a folder {@code dir} lacks, whole; a folder
   * it has, entry by entry.
   */
  private void moves(FileStatus from, Path dir, String prefix, List<String> out) throws IOException {
    String name = from.getPath().getName();
    Path target = Files2.child(dir, name);
    if (from.isDirectory() && fs.exists(target)) {
      for (FileStatus c : fs.listStatus(from.getPath())) {
        moves(c, target, prefix + name + "/", out);
      }
    } else {
      out.add(prefix + name);
    }
  }

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

  private static void writeJournal(FileSystem fs, Path journal, List<String> moves) throws IOException {
    try (java.io.OutputStream os = fs.create(journal, true)) {
      os.write(JSON.writeValueAsBytes(java.util.Map.of("format", 1, "moved_in", moves)));
    }
  }

  private static List<String> readJournal(FileSystem fs, Path journal) throws IOException {
    try (java.io.InputStream in = fs.open(journal)) {
      com.fasterxml.jackson.databind.JsonNode root = JSON.readTree(in);
      List<String> moves = new ArrayList<>();
      if (root == null || !root.path("moved_in").isArray()) {
        throw new IOException(journal + " is not an append journal volpool wrote");
      }
      root.get("moved_in").forEach(n -> moves.add(n.asText()));
      return moves;
    }
  }

  /** Deletes from {@code dir} the journaled entries an append moved in; returns how many were there. */
  private static int undo(FileSystem fs, Path dir, List<String> moves) throws IOException {
    int n = 0;
    for (String rel : moves) {
      Path p = new Path(dir.toString() + "/" + rel);
      if (fs.exists(p)) {
        fs.delete(p, true);
        n++;
      }
    }
    return n;
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
      if (!n.startsWith(prefix) || n.endsWith(".owner") || n.endsWith(MANIFEST) || n.endsWith(JOURNAL)) {
        continue; // a journal goes with the recovery of its append (recoverReplaced)
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
          // a run writes its owner file before its manifest and removes it first when it ends: a manifest with
          // neither staging nor owner file is an ended run's, whatever its age
          if (!runId.equals(keep) && !fs.exists(new Path(out.getParent(), prefix + runId))
              && (!fs.exists(ownerFile) || RunOwner.deadBecause(fs, st, ownerFile).isPresent())) {
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
   * (no output now), the old output is put back, so a kill never loses the output it was replacing. An
   * appending run's (it left a journal): the entries it moved in are taken out again unless its manifest
   * was in (then its summary and marker are moved in too), so the output holds the append whole or not at
   * all. Left alone while its run is alive (it is committing right now).
   */
  static void recoverReplaced(FileSystem fs, Path out) throws IOException {
    recoverReplaced(fs, out, false);
  }

  /** As above; {@code lockHeld}: the caller holds the output's lock (a commit, before it changes the output). */
  static void recoverReplaced(FileSystem fs, Path out, boolean lockHeld) throws IOException {
    String prefix = "." + out.getName() + STAGING;
    for (FileStatus st : fs.listStatus(out.getParent())) {
      String n = st.getPath().getName();
      if (!n.startsWith(prefix) || !(n.endsWith(REPLACED) || n.endsWith(JOURNAL))) {
        continue;
      }
      String run = n.substring(prefix.length(), n.length() - (n.endsWith(REPLACED) ? REPLACED : JOURNAL).length());
      Path ownerFile = RunOwner.of(out, run);
      Optional<String> dead;
      try {
        dead = fs.exists(ownerFile) ? RunOwner.deadBecause(fs, st, ownerFile) : Optional.of("its run finished");
      } catch (java.io.FileNotFoundException e) {
        continue; // its run finished its commit while we looked: it removes what it moved aside itself
      }
      if (dead.isEmpty()) {
        continue;
      }
      Path journal = journal(out, run);
      if (n.endsWith(REPLACED)) {
        if (lockHeld) {
          recoverAside(fs, out, st.getPath(), run, journal, dead.get());
          continue;
        }
        // under the output's lock: another run starting now may be recovering the same output
        CommitLock lock = new CommitLock(fs, out, "recovery-" + java.util.UUID.randomUUID(), n, false);
        long until = System.nanoTime() + 120_000_000_000L;
        while (!lock.tryAcquire()) {
          if (!fs.exists(st.getPath()) || System.nanoTime() > until) {
            break;
          }
          try {
            Thread.sleep(100);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
        }
        if (!lock.held()) {
          if (fs.exists(st.getPath())) {
            throw new ConcurrentCommitException("another run holds the lock of " + out + " while " + st.getPath()
                + ", left by a dead run, waits to be put back; nothing was done");
          }
          continue; // the run holding the lock put it back
        }
        try {
          if (fs.exists(st.getPath())) {
            recoverAside(fs, out, st.getPath(), run, journal, dead.get());
          }
        } finally {
          lock.release();
        }
        continue;
      }
      if (n.endsWith(JOURNAL)) {
        // an append's journal: what it names is in an output moved aside (handled with it), or the append got its
        // output back in place and died before deleting the journal
        if (!fs.exists(new Path(out.getParent(), prefix + run + REPLACED))) {
          fs.delete(journal, false);
        }
        continue;
      }
    }
  }

  /** Finishes or undoes the commit of dead run {@code run}, which left {@code aside} (the caller holds the output's lock). */
  private static void recoverAside(FileSystem fs, Path out, Path aside, String run, Path journal, String why)
      throws IOException {
    String prefix = "." + out.getName() + STAGING;
    if (fs.exists(out)) {
      if (fs.exists(journal)) {
        // an append's output moved aside, and another output in its place: neither is thrown away
        throw new IOException("output " + out + " exists, and " + aside + " holds the output an appending run (" + why
            + ") moved aside before it died: another run made the output meanwhile. Nothing was removed; compare the two"
            + " and keep one (rename it to " + out.getName() + "), then rerun");
      }
      LOG.warn("volpool: removing {}, the output {} replaced by a run that died before removing it ({})", aside,
          out, why);
      fs.delete(aside, true);
      return;
    }
    if (fs.exists(journal)) {
      Path had = new Path(aside, RunManifest.FILE);
      Path before = manifestBefore(aside, run);
      RunManifest m = fs.exists(had) ? RunManifest.read(fs, aside) : null;
      if (m != null && m.runs().contains(run)) {
        // past its commit point: the append is in; its summary and marker follow
        Path staging = new Path(out.getParent(), prefix + run);
        if (fs.exists(staging)) {
          for (FileStatus f : fs.listStatus(staging)) {
            if (replaceable(f.getPath().getName())) {
              Files2.merge(fs, f, aside, existing -> { });
            }
          }
        }
        fs.delete(before, false);
        LOG.warn("volpool: finished the commit of appending run {} on {}, which died after its manifest was in ({})",
            run, out, why);
      } else {
        int undone = undo(fs, aside, readJournal(fs, journal));
        if (!fs.exists(had) && fs.exists(before) && !fs.rename(before, had)) {
          throw new IOException("could not put the manifest " + before + " back to " + had);
        }
        LOG.warn("volpool: took the {} entries an appending run {} had moved into {} out again: it died before its"
            + " commit ({}); the output is as before that run", undone, run, out, why);
      }
    }
    if (!fs.rename(aside, out)) {
      throw new IOException("could not put the output " + aside + ", which a run (" + why + ") moved aside and died, back"
          + " to " + out + "; nothing else was done: rename it back by hand, then rerun");
    }
    LOG.warn("volpool: restored the output {} from {}: a run ({}) moved it aside to change it and died before it"
        + " was back", out, aside, why);
    fs.delete(journal, false);
  }
}
