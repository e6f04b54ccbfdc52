package io.volpool.job.io;

import io.volpool.conf.VolpoolOptions;
import io.volpool.conf.SettingsException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job writes into a hidden staging folder beside the output ({@code .NAME.volpool-staging-ID})
 * and renames it to the output only after every task succeeded and the output was checked, so a
 * failed or killed job never leaves something that looks like a complete output.
 *
 * <p>Beside the staging folder an owner file ({@code .NAME.volpool-staging-ID.owner}) names the
 * host, process and start of the run, and the running driver touches it every 30 s. A later run on
 * the same output removes the staging folders of dead runs (same host and the process is gone, or
 * no heartbeat for {@link #STALE_MILLIS}) and never those of live ones. The final delete-and-rename
 * holds an exclusive lock file ({@code .NAME.volpool-commit.lock}, created atomically), so two jobs
 * committing to one output never mix or nest: one wins, the other fails saying so.
 * Owns its staging folder until {@link #commit} or {@link #abort}.
 *
 * <p>On S3 ({@link ObjectStoreCommit}) nothing is renamed: the tasks' files are uncompleted multipart
 * uploads under the output's {@code __magic_job-ID} folder until {@link #publish} completes them, under
 * the same lock, after removing an old output under overwrite; the output then exists only once it
 * holds something besides such folders. A dead run's uploads are aborted from its own records by the
 * next run on the output. The lock is advisory there (S3 has no exclusive create here: a second run
 * could take it in the same instant), and an old output replaced under overwrite is deleted just
 * before the new one is committed, not moved aside (that would copy it): a run killed in between
 * leaves neither.
 */
public final class StagedOutput implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(StagedOutput.class);
  static final String STAGING = ".volpool-staging-";
  /** A run whose owner file was not touched for this long is dead. */
  static final long STALE_MILLIS = 10 * 60 * 1000L;
  static final long HEARTBEAT_SECONDS = 30;
  /** A commit lock untouched this long belongs to a dead run on another host (its owner touches it every 30 s). */
  static final long LOCK_STALE_MILLIS = 2 * 60 * 1000L;

  private final FileSystem fs;
  private final Path output;
  private final Path staging;
  private final Path owner;
  private final Path lock;
  private final boolean overwrite;
  /** The run's id: its staging folder's suffix, and on S3 its magic committer's job. */
  private final String id;
  /** On S3: committed through S3A's magic committer ({@link ObjectStoreCommit}), not renamed. */
  private final boolean objectStore;
  /** On S3: the job commit began (files may be visible from here on) and ended ({@link #publish}). */
  private boolean committing;
  private boolean published;
  /** When the run started, and when it took the commit lock: the owner and lock files say so, heartbeat after heartbeat. */
  private final Instant started = Instant.now();
  private Instant lockTaken;
  private final ScheduledExecutorService heartbeat;

  private StagedOutput(FileSystem fs, Path output, String id, boolean overwrite) throws IOException {
    this.fs = fs;
    this.output = output;
    this.id = id;
    this.objectStore = ObjectStoreCommit.applies(fs);
    this.staging = objectStore ? output : new Path(output.getParent(), "." + output.getName() + STAGING + id);
    this.owner = ownerOf(output, id);
    this.lock = lockOf(output);
    this.overwrite = overwrite;
    writeOwner();
    this.heartbeat = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "volpool-staging-heartbeat");
      t.setDaemon(true);
      return t;
    });
    heartbeat.scheduleAtFixedRate(this::touch, HEARTBEAT_SECONDS, HEARTBEAT_SECONDS, TimeUnit.SECONDS);
  }

  /**
   * Checks the output path against the mode, removes staging folders of dead runs on this output
   * and picks a staging folder.
   *
   * @throws SettingsException when the output exists and {@code overwrite} is false
   */
  public static StagedOutput prepare(String output, boolean overwrite, Configuration conf) throws IOException {
    Path out = new Path(output);
    FileSystem fs = out.getFileSystem(conf);
    out = fs.makeQualified(out);
    boolean objectStore = ObjectStoreCommit.applies(fs);
    if (out.getParent() != null && fs.exists(out.getParent())) {
      // a run killed in the middle of replacing this output: finish or undo its replace before looking at the output
      if (!objectStore) {
        recoverReplaced(fs, out);
      }
      checkLock(fs, out);
    }
    if (objectStore) {
      // before the existence check: a dead run's upload folder inside the output is not an output
      removeDeadUploads(fs, out);
    }
    if (exists(fs, out) && !overwrite) {
      throw new SettingsException("output " + out + " already exists; set " + VolpoolOptions.MODE.key() + "=overwrite"
          + " to replace it, or choose another " + VolpoolOptions.OUTPUT.key());
    }
    Path parent = out.getParent();
    if (parent != null && !fs.exists(parent)) {
      fs.mkdirs(parent);
    }
    if (!objectStore) {
      removeDeadStaging(fs, out);
    }
    return new StagedOutput(fs, out, UUID.randomUUID().toString(), overwrite);
  }

  static Path ownerOf(Path out, String id) {
    return new Path(out.getParent(), "." + out.getName() + STAGING + id + ".owner");
  }

  /**
   * Whether {@code out} is an output: it exists, and on S3 it holds something besides the magic
   * committer's folders of runs (where uncompleted uploads are recorded while a run goes on).
   */
  public static boolean exists(FileSystem fs, Path out) throws IOException {
    if (!fs.exists(out)) {
      return false;
    }
    if (!ObjectStoreCommit.applies(fs) || fs.getFileStatus(out).isFile()) {
      return true;
    }
    for (FileStatus st : fs.listStatus(out)) {
      if (!st.getPath().getName().startsWith(ObjectStoreCommit.MAGIC)) {
        return true;
      }
    }
    return false;
  }

  /**
   * On S3: aborts the uploads of runs on {@code out} that are not alive (their owner file says so),
   * and of magic folders whose run left no owner file, and deletes their folders and owner files.
   */
  static int removeDeadUploads(FileSystem fs, Path out) throws IOException {
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
      try {
        Optional<String> why = deadBecause(fs, st, st.getPath());
        if (why.isPresent()) {
          LOG.warn("volpool: aborting the uploads of run {} on {}, which is not alive ({})", runId, out, why.get());
          ObjectStoreCommit.abortUploads(fs, out, runId);
          fs.delete(st.getPath(), false);
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
        if (n.startsWith(ObjectStoreCommit.MAGIC) && !owned.contains(n.substring(ObjectStoreCommit.MAGIC.length()))
            && fs.exists(st.getPath())) {
          String runId = n.substring(ObjectStoreCommit.MAGIC.length());
          LOG.warn("volpool: aborting the uploads of run {} on {}, which left no owner file", runId, out);
          ObjectStoreCommit.abortUploads(fs, out, runId);
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
        Optional<String> why = deadBecause(fs, st, ownerFile);
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
          if (!fs.exists(dir) && deadBecause(fs, st, st.getPath()).isPresent()) {
            fs.delete(st.getPath(), false);
          }
        } catch (java.io.FileNotFoundException e) {
          // gone meanwhile
        }
      }
    }
    return removed;
  }

  static final String REPLACED = ".replaced";

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
        dead = fs.exists(ownerFile) ? deadBecause(fs, st, ownerFile) : Optional.of("its run finished");
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

  /**
   * The commit lock of {@code out} before any work starts: a lock whose owner is dead is removed at
   * once; a live one is reported (this run commits after it, or fails then if it still holds it).
   */
  static void checkLock(FileSystem fs, Path out) throws IOException {
    Path lock = lockOf(out);
    Optional<String> owner = lockOwner(fs, lock);
    if (owner.isEmpty()) {
      return;
    }
    Optional<String> dead = lockDead(fs, lock);
    if (dead.isPresent()) {
      if (!dead.get().equals("released")) {
        LOG.warn("volpool: removing the commit lock {} of {}: {}", lock, owner.get(), dead.get());
        fs.delete(lock, false);
      }
    } else {
      LOG.warn("volpool: {} is committing to {} right now (lock {}); this run will commit after it", owner.get(), out,
          lock);
    }
  }

  /** How old a lock without its owner's record must be to be taken for a dead run's. */
  static final long INCOMPLETE_LOCK_MILLIS = 5_000;

  static Path lockOf(Path out) {
    return new Path(out.getParent(), "." + out.getName() + ".volpool-commit.lock");
  }

  /** Who holds {@code lock}, as text; empty when there is no lock. */
  private static Optional<String> lockOwner(FileSystem fs, Path lock) throws IOException {
    Properties p = new Properties();
    try (InputStream in = fs.open(lock)) {
      p.load(in);
    } catch (java.io.FileNotFoundException e) {
      return Optional.empty();
    }
    return Optional.of("the run of process " + p.getProperty("pid", "?") + " on " + p.getProperty("host", "?")
        + " (started " + p.getProperty("started", "?") + ")");
  }

  /**
   * Why the owner of {@code lock} is dead, or empty while it lives: on this host its process must
   * still run; elsewhere it must have touched the lock within {@link #LOCK_STALE_MILLIS} (it does
   * every {@link #HEARTBEAT_SECONDS} while it holds it).
   */
  static Optional<String> lockDead(FileSystem fs, Path lock) throws IOException {
    FileStatus st;
    Properties p = new Properties();
    try {
      st = fs.getFileStatus(lock);
    } catch (java.io.FileNotFoundException e) {
      return Optional.of("released");
    }
    try (InputStream in = fs.open(lock)) {
      p.load(in);
    } catch (java.io.FileNotFoundException e) {
      return Optional.of("released");
    } catch (IllegalArgumentException e) {
      p.clear(); // not a lock this code wrote: judged as an empty one below
    }
    long age = System.currentTimeMillis() - st.getModificationTime();
    if (p.getProperty("host") == null || p.getProperty("pid") == null) {
      // its owner writes the whole record as it creates the lock: one without it is the remains of a run that could
      // not write it (a full disk) and died; a few seconds spare a run that is writing it right now
      return age > INCOMPLETE_LOCK_MILLIS ? Optional.of("it is empty or unreadable (" + st.getLen() + " bytes; its owner"
          + " could not write it, e.g. on a full disk)") : Optional.empty();
    }
    if (host().equals(p.getProperty("host")) && p.getProperty("pid") != null) {
      try {
        long pid = Long.parseLong(p.getProperty("pid"));
        Optional<ProcessHandle> h = ProcessHandle.of(pid);
        boolean alive = h.isPresent() && h.get().info().startInstant().map(Instant::toString).orElse("")
            .equals(p.getProperty("processStart", ""));
        return alive ? Optional.empty() : Optional.of("process " + pid + " on this host has ended");
      } catch (NumberFormatException e) {
        // unreadable: judge by age below
      }
    }
    return age > LOCK_STALE_MILLIS ? Optional.of("untouched for " + age / 1000 + " s (its owner stopped beating)")
        : Optional.empty();
  }

  private static Optional<String> deadBecause(FileSystem fs, FileStatus staging, Path ownerFile) throws IOException {
    long now = System.currentTimeMillis();
    if (!fs.exists(ownerFile)) {
      return now - staging.getModificationTime() > STALE_MILLIS
          ? Optional.of("no owner file and untouched for " + (now - staging.getModificationTime()) / 1000 + " s")
          : Optional.empty();
    }
    Properties p = new Properties();
    try (InputStream in = fs.open(ownerFile)) {
      p.load(in);
    } catch (IOException | IllegalArgumentException e) {
      return Optional.of("unreadable owner file");
    }
    long beat = fs.getFileStatus(ownerFile).getModificationTime();
    if (host().equals(p.getProperty("host"))) {
      try {
        long pid = Long.parseLong(p.getProperty("pid", "-1"));
        Optional<ProcessHandle> h = ProcessHandle.of(pid);
        String started = p.getProperty("processStart", "");
        boolean alive = h.isPresent() && h.get().info().startInstant().map(Instant::toString).orElse("").equals(started);
        return alive ? Optional.empty() : Optional.of("process " + pid + " on this host has ended");
      } catch (NumberFormatException e) {
        return Optional.of("unreadable owner file");
      }
    }
    return now - beat > STALE_MILLIS
        ? Optional.of("its driver on " + p.getProperty("host") + " has not been heard from for " + (now - beat) / 1000 + " s")
        : Optional.empty();
  }

  private static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "unknown";
    }
  }

  private void writeOwner() throws IOException {
    ProcessHandle me = ProcessHandle.current();
    String text = "host=" + host() + "\npid=" + me.pid() + "\nprocessStart="
        + me.info().startInstant().map(Instant::toString).orElse("") + "\nstarted=" + started + "\noutput=" + output
        + "\n";
    try (OutputStream os = fs.create(owner, true)) {
      os.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  private volatile boolean lockHeld;

  private void touch() {
    try {
      if (objectStore) {
        // S3 keeps no modification time but the last write's (S3A's setTimes does nothing): write them again
        writeOwner();
        if (lockHeld) {
          try (OutputStream os = fs.create(lock, true)) {
            os.write(lockText());
          }
        }
        return;
      }
      fs.setTimes(owner, System.currentTimeMillis(), -1);
      if (lockHeld) {
        fs.setTimes(lock, System.currentTimeMillis(), -1);
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("heartbeat of {} failed: {}", owner, e.toString());
    }
  }

  public Path output() {
    return output;
  }

  /**
   * Where the tasks' committer writes: the staging folder, or on S3 the output itself (its files are
   * uncompleted uploads until {@link #publish}).
   */
  public Path staging() {
    return staging;
  }

  /** Sets the commit in the job's configuration, which the tasks' committer and {@link #publish} read. */
  public void configure(Configuration jobConf) {
    jobConf.set(io.volpool.spark.VolpoolOutputFormat.COMMIT, objectStore ? io.volpool.spark.VolpoolOutputFormat.OBJECT_STORE
        : io.volpool.spark.VolpoolOutputFormat.RENAME);
    if (objectStore) {
      ObjectStoreCommit.configure(jobConf, id);
    }
  }

  /**
   * Makes the committed files countable and returns their folder: the staging folder (nothing is
   * visible at the output yet); on S3 the output, after taking its lock, removing an old output under
   * overwrite and completing the tasks' uploads (the job commit that Spark left to the driver).
   *
   * @throws ConcurrentCommitException when another run holds the lock, or the output appeared meanwhile
   */
  public Path publish(Configuration jobConf) throws IOException {
    if (!objectStore) {
      if (!fs.exists(staging)) {
        fs.mkdirs(staging);
      }
      return staging;
    }
    acquireLock();
    if (exists(fs, output)) {
      if (!overwrite) {
        throw new ConcurrentCommitException("output " + output + " appeared while the job ran; this run's uploads were"
            + " not completed");
      }
      // no rename on S3 (it would copy): the old output is deleted, then the new one committed; runs' upload
      // records (this run's, and a concurrent one's, which then fails at the lock) stay
      for (FileStatus st : fs.listStatus(output)) {
        if (!st.getPath().getName().startsWith(ObjectStoreCommit.MAGIC)) {
          fs.delete(st.getPath(), true);
        }
      }
      LOG.info("volpool: deleted the old output {} (mode=overwrite) before committing this run's", output);
    }
    committing = true;
    ObjectStoreCommit.commitJob(output, jobConf, id);
    published = true;
    Path magic = ObjectStoreCommit.magicDir(output, id);
    if (fs.exists(magic)) {
      fs.delete(magic, true);
    }
    return output;
  }

  /** Writes a small text file (e.g. the run summary) into the folder {@link #publish} returned. */
  public void writeText(String name, String text) throws IOException {
    try (OutputStream os = fs.create(new Path(staging, name), true)) {
      os.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  /**
   * Moves the staged output into place (deleting an old output under overwrite), holding the
   * output's commit lock.
   *
   * @throws ConcurrentCommitException when another job holds the lock, or the output appeared meanwhile
   */
  public void commit() throws IOException {
    if (objectStore) {
      if (!published) {
        throw new IllegalStateException("commit before publish of " + output);
      }
      releaseLock();
      stopHeartbeat();
      fs.delete(owner, false);
      return;
    }
    if (!fs.exists(staging)) {
      fs.mkdirs(staging);
    }
    acquireLock();
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
      releaseLock();
    }
    if (old != null) {
      fs.delete(old, true);
    }
    stopHeartbeat();
    fs.delete(owner, false);
  }

  private void acquireLock() throws IOException {
    lockTaken = Instant.now();
    for (int attempt = 0; attempt < 3; attempt++) {
      if (createExclusive(lock)) {
        lockHeld = true;
        return;
      }
      Optional<String> dead = lockDead(fs, lock);
      if (dead.isPresent()) {
        if (!dead.get().equals("released")) {
          LOG.warn("volpool: taking over the commit lock {}: {}", lock, dead.get());
          fs.delete(lock, false);
        }
        continue;
      }
      break;
    }
    String who = lockOwner(fs, lock).orElse("another job");
    throw new ConcurrentCommitException(who + " is committing to " + output + " right now (lock " + lock + "); this"
        + " job's result was not moved into place. Rerun when it has finished");
  }

  /**
   * Creates {@code p} holding this run's owner record if it does not exist, atomically (O_EXCL
   * locally, the namenode's create on HDFS).
   */
  private byte[] lockText() {
    ProcessHandle me = ProcessHandle.current();
    return ("host=" + host() + "\npid=" + me.pid() + "\nprocessStart="
        + me.info().startInstant().map(Instant::toString).orElse("") + "\nstarted=" + lockTaken + "\nstaging="
        + staging.getName() + "\nrun=" + id + "\n").getBytes(StandardCharsets.UTF_8);
  }

  private boolean createExclusive(Path p) throws IOException {
    byte[] text = lockText();
    if ("file".equals(fs.getScheme())) {
      // the record is written beside, then linked into place (atomic and exclusive): a full disk leaves no empty lock
      java.nio.file.Path target = io.volpool.io.Files2.local(fs.makeQualified(p));
      java.nio.file.Path tmp = target.resolveSibling(target.getFileName() + "." + id + ".tmp");
      try {
        Files.write(tmp, text, java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE);
        Files.createLink(target, tmp);
        return true;
      } catch (FileAlreadyExistsException e) {
        return false;
      } catch (UnsupportedOperationException | java.nio.file.FileSystemException e) {
        // a filesystem without hard links: exclusive create, then the record
        try {
          Files.write(target, text, java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE);
          return true;
        } catch (FileAlreadyExistsException e2) {
          return false;
        }
      } finally {
        Files.deleteIfExists(tmp);
      }
    }
    try (OutputStream os = fs.create(p, false)) {
      os.write(text);
      return true;
    } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
      return false;
    }
  }

  private void releaseLock() {
    lockHeld = false;
    try {
      fs.delete(lock, false);
    } catch (IOException e) {
      LOG.warn("could not delete the commit lock {}: {}", lock, e.toString());
    }
  }

  private void stopHeartbeat() {
    heartbeat.shutdownNow();
  }

  /**
   * Deletes the staging folder after a failure; never throws. Tasks of the failed stage may
   * still be finishing and writing, so the deletion is retried until the folder stays gone.
   */
  public void abort() {
    stopHeartbeat();
    if (objectStore) {
      try {
        // the uploads not completed yet (all of them unless the job commit began)
        ObjectStoreCommit.abortUploads(fs, output, id);
        if (committing) {
          // the commit made files visible (all of them, or some before it failed), and the output held nothing
          // else (it did not exist, or its old files were deleted under the lock): they are not an output
          fs.delete(output, true);
          LOG.warn("volpool: deleted {}, which this run {} committed", output, published ? "had" : "had partly");
        }
      } catch (IOException | RuntimeException e) {
        LOG.warn("volpool: could not clean up the uploads of run {} on {} (the next run on it will): {}", id, output,
            e.toString());
      }
      if (lockHeld) {
        releaseLock();
      }
      try {
        fs.delete(owner, false);
      } catch (IOException e) {
        LOG.warn("could not delete {}: {}", owner, e.toString());
      }
      return;
    }
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
    try {
      fs.delete(owner, false);
    } catch (IOException e) {
      LOG.warn("could not delete {}: {}", owner, e.toString());
    }
  }

  @Override
  public void close() {
    stopHeartbeat();
  }

  /** Another job committed to, or is committing to, the same output. */
  public static final class ConcurrentCommitException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public ConcurrentCommitException(String message) {
      super(message);
    }
  }
}
