package io.volpool.job.commit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner file of a run on an output ({@code .NAME.volpool-staging-ID.owner}): the host, process
 * and start of the run, touched by the running driver every {@link #HEARTBEAT_SECONDS} (with the
 * commit lock while it holds it). A later run on the output judges by it whether this run is alive
 * ({@link #deadBecause}) before removing what it staged.
 */
final class RunOwner {
  private static final Logger LOG = LoggerFactory.getLogger(RunOwner.class);
  /** A run whose owner file was not touched for this long is dead. */
  static final long STALE_MILLIS = 10 * 60 * 1000L;
  static final long HEARTBEAT_SECONDS = 30;

  private final FileSystem fs;
  private final Path file;
  private final Path output;
  private final boolean rewriteToTouch;
  private final CommitLock lock;
  private final Instant started = Instant.now();
  private final ScheduledExecutorService heartbeat;

  /** Writes the owner file of run {@code id} on {@code output} and starts its heartbeat, which also touches {@code lock}. */
  RunOwner(FileSystem fs, Path output, String id, boolean rewriteToTouch, CommitLock lock, boolean replaces)
      throws IOException {
    this.replaces = replaces;
    this.fs = fs;
    this.file = of(output, id);
    this.output = output;
    this.rewriteToTouch = rewriteToTouch;
    this.lock = lock;
    write();
    this.heartbeat = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "volpool-staging-heartbeat");
      t.setDaemon(true);
      return t;
    });
    heartbeat.scheduleAtFixedRate(this::touch, HEARTBEAT_SECONDS, HEARTBEAT_SECONDS, TimeUnit.SECONDS);
  }

  static Path of(Path out, String id) {
    return new Path(out.getParent(), "." + out.getName() + OutputCommit.STAGING + id + ".owner");
  }

  private void touch() {
    try {
      if (rewriteToTouch) {
        // S3 keeps no modification time but the last write's (S3A's setTimes does nothing): write it again
        write();
      } else {
        fs.setTimes(file, System.currentTimeMillis(), -1);
      }
      lock.touch();
    } catch (IOException | RuntimeException e) {
      LOG.debug("heartbeat of {} failed: {}", file, e.toString());
    }
  }

  void stop() {
    heartbeat.shutdownNow();
  }

  /**
   * The run failed and leaves its committed work for a resumed run: no more heartbeats, and the owner
   * file says the run ended, so the next run on the output adopts or removes its staging at once.
   */
  void markEnded(String why) {
    stop();
    try {
      ended = why;
      write();
    } catch (IOException e) {
      LOG.warn("could not mark {} ended: {}", file, e.toString());
    }
  }

  private String ended;
  /** The run replaces the output (mode=overwrite): a run resuming it does too. */
  private final boolean replaces;

  /** Whether the run of owner file {@code ownerFile} was to replace its output (mode=overwrite). */
  static boolean replaces(FileSystem fs, Path ownerFile) {
    Properties p = new Properties();
    try (InputStream in = fs.open(ownerFile)) {
      p.load(in);
    } catch (IOException | IllegalArgumentException e) {
      return false;
    }
    return "true".equals(p.getProperty("replaces"));
  }

  /** A value for the owner file: one line, as Properties reads it back (a path may hold what a line break would split). */
  private static String escape(String v) {
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r");
  }

  /** The run has ended: no more heartbeats, and the owner file goes (a failure to delete it is logged). */
  void remove() {
    stop();
    try {
      fs.delete(file, false);
    } catch (IOException e) {
      LOG.warn("could not delete {}: {}", file, e.toString());
    }
  }

  static Optional<String> deadBecause(FileSystem fs, FileStatus staging, Path ownerFile) throws IOException {
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
    if (p.getProperty("ended") != null) {
      return Optional.of("it ended: " + p.getProperty("ended"));
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

  static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "unknown";
    }
  }

  private void write() throws IOException {
    ProcessHandle me = ProcessHandle.current();
    String text = "host=" + host() + "\npid=" + me.pid() + "\nprocessStart="
        + me.info().startInstant().map(Instant::toString).orElse("") + "\nstarted=" + started + "\noutput="
        + escape(output.toString()) + "\nreplaces=" + replaces + "\n" + (ended == null ? "" : "ended=" + escape(ended)
        + "\n");
    try (OutputStream os = fs.create(file, true)) {
      os.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }
}
