package io.volpool.job.commit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.time.Instant;
import java.util.Optional;
import java.util.Properties;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The exclusive lock a run holds while it publishes to an output ({@code .NAME.volpool-commit.lock},
 * created atomically), so two runs committing to one output never mix or nest: one wins, the other
 * fails saying so. It records its owner (host, process, start); the owner touches it every heartbeat
 * while it holds it, and a lock whose owner is dead is taken over. Advisory on S3, which has no
 * exclusive create here.
 */
final class CommitLock {
  private static final Logger LOG = LoggerFactory.getLogger(CommitLock.class);
  /** A commit lock untouched this long belongs to a dead run on another host (its owner touches it every 30 s). */
  static final long STALE_MILLIS = 2 * 60 * 1000L;
  /** How old a lock without its owner's record must be to be taken for a dead run's. */
  static final long INCOMPLETE_MILLIS = 5_000;

  private final FileSystem fs;
  private final Path output;
  private final Path lock;
  private final String id;
  private final String stagingName;
  /** S3 keeps no modification time but the last write's (S3A's setTimes does nothing): a touch writes the record again. */
  private final boolean rewriteToTouch;
  private volatile boolean held;
  private Instant lockTaken;

  CommitLock(FileSystem fs, Path output, String id, String stagingName, boolean rewriteToTouch) {
    this.fs = fs;
    this.output = output;
    this.lock = of(output);
    this.id = id;
    this.stagingName = stagingName;
    this.rewriteToTouch = rewriteToTouch;
  }

  boolean held() {
    return held;
  }

  /** The owner's heartbeat: keeps a held lock from being taken for a dead run's. */
  void touch() throws IOException {
    if (!held) {
      return;
    }
    if (rewriteToTouch) {
      try (OutputStream os = fs.create(lock, true)) {
        os.write(text());
      }
    } else {
      fs.setTimes(lock, System.currentTimeMillis(), -1);
    }
  }

  /**
   * The commit lock of {@code out} before any work starts: a lock whose owner is dead is removed at
   * once; a live one is reported (this run commits after it, or fails then if it still holds it).
   */
  static void check(FileSystem fs, Path out) throws IOException {
    Path lock = of(out);
    Optional<String> owner = owner(fs, lock);
    if (owner.isEmpty()) {
      return;
    }
    Optional<String> dead = dead(fs, lock);
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

  static Path of(Path out) {
    return new Path(out.getParent(), "." + out.getName() + ".volpool-commit.lock");
  }

  /** Who holds {@code lock}, as text; empty when there is no lock. */
  static Optional<String> owner(FileSystem fs, Path lock) throws IOException {
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
   * still run; elsewhere it must have touched the lock within {@link #STALE_MILLIS} (it does
   * every {@link RunOwner#HEARTBEAT_SECONDS} while it holds it).
   */
  static Optional<String> dead(FileSystem fs, Path lock) throws IOException {
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
      return age > INCOMPLETE_MILLIS ? Optional.of("it is empty or unreadable (" + st.getLen() + " bytes; its owner"
          + " could not write it, e.g. on a full disk)") : Optional.empty();
    }
    if (RunOwner.host().equals(p.getProperty("host")) && p.getProperty("pid") != null) {
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
    return age > STALE_MILLIS ? Optional.of("untouched for " + age / 1000 + " s (its owner stopped beating)")
        : Optional.empty();
  }

  /**
   * Takes the lock if it is free or its owner is dead, without waiting; false when a live run holds it. A
   * run's recovery of a dead run's half-done commit takes it, so two runs never recover one at once.
   */
  boolean tryAcquire() throws IOException {
    lockTaken = Instant.now();
    for (int attempt = 0; attempt < 2; attempt++) {
      if (createExclusive()) {
        held = true;
        return true;
      }
      Optional<String> dead = dead(fs, lock);
      if (dead.isEmpty()) {
        return false;
      }
      if (!dead.get().equals("released")) {
        LOG.warn("volpool: taking over the commit lock {}: {}", lock, dead.get());
        fs.delete(lock, false);
      }
    }
    return false;
  }

  /**
   * How long a commit waits for another live run's commit (or a starting run's recovery) to release the lock: 60 s
   * (commits and recoveries are renames); the system property {@code volpool.commitLock.waitMillis} (tests) sets it.
   */
  static long waitMillis() {
    return io.volpool.conf.InternalProperties.COMMIT_LOCK_WAIT_MILLIS.longValue();
  }

  void acquire() throws IOException {
    lockTaken = Instant.now();
    long until = System.currentTimeMillis() + waitMillis();
    boolean said = false;
    while (true) {
      if (createExclusive()) {
        held = true;
        return;
      }
      Optional<String> dead = dead(fs, lock);
      if (dead.isPresent()) {
        if (!dead.get().equals("released")) {
          LOG.warn("volpool: taking over the commit lock {}: {}", lock, dead.get());
          fs.delete(lock, false);
        }
        continue;
      }
      // a live run holds it: commits and recoveries are renames, seconds at most
      if (System.currentTimeMillis() > until) {
        break;
      }
      if (!said) {
        LOG.info("volpool: {} holds the commit lock of {}; waiting up to {} s for it", owner(fs, lock).orElse("another"
            + " run"), output, waitMillis() / 1000);
        said = true;
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    String who = owner(fs, lock).orElse("another job");
    throw new ConcurrentCommitException(who + " is committing to " + output + " right now (lock " + lock + "); this"
        + " job's result was not moved into place. Rerun when it has finished");
  }

  /** This run's record in the lock: who holds it, since when, for which staging. */
  private byte[] text() {
    ProcessHandle me = ProcessHandle.current();
    return ("host=" + RunOwner.host() + "\npid=" + me.pid() + "\nprocessStart="
        + me.info().startInstant().map(Instant::toString).orElse("") + "\nstarted=" + lockTaken + "\nstaging="
        + stagingName + "\nrun=" + id + "\n").getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Creates the lock holding this run's record if it does not exist, atomically (O_EXCL locally, the
   * namenode's create on HDFS).
   */
  private boolean createExclusive() throws IOException {
    byte[] text = text();
    if ("file".equals(fs.getUri().getScheme())) { // getUri: the raw local filesystem has no getScheme()
      // the record is written beside, then linked into place (atomic and exclusive): a full disk leaves no empty lock
      java.nio.file.Path target = io.volpool.io.Files2.local(fs.makeQualified(lock));
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
    try (OutputStream os = fs.create(lock, false)) {
      os.write(text);
      return true;
    } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
      return false;
    }
  }

  void release() {
    held = false;
    try {
      fs.delete(lock, false);
    } catch (IOException e) {
      LOG.warn("could not delete the commit lock {}: {}", lock, e.toString());
    }
  }
}
