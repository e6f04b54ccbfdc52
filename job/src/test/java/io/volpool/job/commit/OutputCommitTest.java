package io.volpool.job.commit;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Commits to one output are exclusive, and staging folders of dead runs are removed, live ones kept. */
class OutputCommitTest {
  static final Configuration CONF = new Configuration();

  static List<String> names(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      // Hadoop's local filesystem writes .NAME.crc checksum files beside what it writes: not ours to count
      return s.map(p -> p.getFileName().toString()).filter(n -> !n.endsWith(".crc")).sorted().toList();
    }
  }

  @Test
  void concurrentOverwriteCommitsNeverNestOrMix(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out");
    AtomicInteger won = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    List<Future<?>> fs = new java.util.ArrayList<>();
    for (int t = 0; t < 2; t++) {
      int job = t;
      fs.add(pool.submit(() -> {
        for (int i = 0; i < 250; i++) {
          OutputCommit o = OutputCommit.prepare(out.toString(), true, CONF);
          o.writeText("from-job-" + job, "run " + i);
          try {
            o.commit();
            won.incrementAndGet();
          } catch (ConcurrentCommitException e) {
            refused.incrementAndGet();
            o.abort();
          }
          List<String> now;
          try {
            now = names(out);
          } catch (java.nio.file.NoSuchFileException e) {
            continue;
          }
          // a listing that started on the old output just before it was moved aside and deleted reads nothing:
          // what must never be seen is two jobs' files, or a staging folder nested inside the output
          assertThat(now).as("output after a commit: one job's file, nothing nested").hasSizeLessThanOrEqualTo(1)
              .allMatch(n -> n.startsWith("from-job-"));
        }
        return null;
      }));
    }
    for (Future<?> f : fs) {
      f.get();
    }
    pool.shutdown();
    assertThat(won.get() + refused.get()).isEqualTo(500);
    assertThat(names(out)).hasSize(1);
    assertThat(names(tmp)).as("no staging folders, owner files or lock left").containsExactly("out");
  }

  static void fakeRun(Path tmp, String id, String host, long pid, String processStart, long heartbeatAgeMillis)
      throws Exception {
    Path staging = tmp.resolve(".out" + OutputCommit.STAGING + id);
    Files.createDirectories(staging.resolve("_temporary/0"));
    Files.writeString(staging.resolve("_temporary/0/part.parquet"), "partial");
    Path owner = tmp.resolve(".out" + OutputCommit.STAGING + id + ".owner");
    Files.writeString(owner, "host=" + host + "\npid=" + pid + "\nprocessStart=" + processStart + "\n",
        StandardCharsets.UTF_8);
    Files.setLastModifiedTime(owner, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()
        - heartbeatAgeMillis));
  }

  @Test
  void stagingOfDeadRunsIsRemovedAndOfLiveRunsKept(@TempDir Path tmp) throws Exception {
    String host = InetAddress.getLocalHost().getHostName();
    ProcessHandle me = ProcessHandle.current();
    String myStart = me.info().startInstant().map(Instant::toString).orElse("");
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    fakeRun(tmp, "dead-here", host, gone.pid(), "2026-01-01T00:00:00Z", 0);
    fakeRun(tmp, "pid-reused", host, me.pid(), "2020-01-01T00:00:00Z", 0);
    fakeRun(tmp, "alive-here", host, me.pid(), myStart, 0);
    fakeRun(tmp, "silent-elsewhere", "other-host", 1, "x", RunOwner.STALE_MILLIS + 60_000);
    fakeRun(tmp, "beating-elsewhere", "other-host", 1, "x", 1_000);
    // a fresh manifest with neither staging nor owner file: an ended run's, removed whatever its age
    Files.writeString(tmp.resolve(".out" + OutputCommit.STAGING + "ended" + OutputCommit.MANIFEST), "{}");
    // a live run's manifest (its owner file beats) stays
    Files.writeString(tmp.resolve(".out" + OutputCommit.STAGING + "beating-elsewhere" + OutputCommit.MANIFEST), "{}");
    int removed = RenameCommit.removeDeadStaging(FileSystem.getLocal(CONF),
        new org.apache.hadoop.fs.Path(tmp.resolve("out").toUri()));
    assertThat(removed).isEqualTo(3);
    assertThat(names(tmp)).containsExactly(".out" + OutputCommit.STAGING + "alive-here",
        ".out" + OutputCommit.STAGING + "alive-here.owner", ".out" + OutputCommit.STAGING + "beating-elsewhere",
        ".out" + OutputCommit.STAGING + "beating-elsewhere" + OutputCommit.MANIFEST,
        ".out" + OutputCommit.STAGING + "beating-elsewhere.owner");
  }

  static Path lockFile(Path tmp) {
    return tmp.resolve(".out.volpool-commit.lock");
  }

  static void writeLock(Path tmp, String host, long pid, String processStart, long ageMillis) throws Exception {
    Files.writeString(lockFile(tmp), "host=" + host + "\npid=" + pid + "\nprocessStart=" + processStart
        + "\nstarted=2026-12-01T00:00:00Z\n", StandardCharsets.UTF_8);
    Files.setLastModifiedTime(lockFile(tmp), java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()
        - ageMillis));
  }

  @Test
  void aDeadRunsCommitLockIsTakenOverBeforeAnyWorkAndALiveOneKept(@TempDir Path tmp) throws Exception {
    String host = InetAddress.getLocalHost().getHostName();
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    // a fresh lock (no age to go by) whose process on this host has ended: taken over at once, at prepare
    writeLock(tmp, host, gone.pid(), "2026-01-01T00:00:00Z", 0);
    OutputCommit o = OutputCommit.prepare(tmp.resolve("out").toString(), true, CONF);
    assertThat(lockFile(tmp)).as("removed before any work").doesNotExist();
    o.writeText("x", "y");
    o.commit();
    assertThat(names(tmp.resolve("out"))).containsExactly("x");
    // another host's lock untouched for longer than its heartbeat allows: dead
    writeLock(tmp, "other-host", 1, "x", CommitLock.STALE_MILLIS + 60_000);
    OutputCommit.prepare(tmp.resolve("out").toString(), true, CONF).abort();
    assertThat(lockFile(tmp)).doesNotExist();
    // a live owner (this process) keeps its lock: the commit fails naming it, and the lock stays
    ProcessHandle me = ProcessHandle.current();
    writeLock(tmp, host, me.pid(), me.info().startInstant().map(Instant::toString).orElse(""), 0);
    OutputCommit live = OutputCommit.prepare(tmp.resolve("out").toString(), true, CONF);
    assertThat(lockFile(tmp)).exists();
    live.writeText("z", "z");
    // the commit waits for a live holder (60 s by default), then gives up naming it
    System.setProperty("volpool.commitLock.waitMillis", "1500");
    long t0 = System.nanoTime();
    try {
      org.assertj.core.api.Assertions.assertThatThrownBy(live::commit)
          .isInstanceOf(ConcurrentCommitException.class)
          .hasMessageContaining("the run of process " + me.pid() + " on " + host + " (started 2026-12-01T00:00:00Z)"
              + " is committing to");
    } finally {
      System.clearProperty("volpool.commitLock.waitMillis");
    }
    assertThat((System.nanoTime() - t0) / 1e9).as("it waited for the holder").isGreaterThanOrEqualTo(1.4);
    live.abort();
    assertThat(lockFile(tmp)).exists();
    assertThat(names(tmp.resolve("out"))).containsExactly("x");
  }

  /**
   * An append killed between the two renames of the manifest (the output's moved to {@code .before-ID}, its own not
   * in yet): the recovery takes its files out and puts the output's manifest back; killed after them, it finishes
   * the append; an output made meanwhile beside a moved-aside append is refused, neither removed.
   */
  @Test
  void anAppendKilledAroundItsManifestIsUndoneOrFinished(@TempDir Path tmp) throws Exception {
    String id = "aaaaaaaa-0000-0000-0000-000000000001";
    for (boolean pastCommit : new boolean[] {false, true}) {
      Path dir = tmp.resolve(String.valueOf(pastCommit));
      Files.createDirectories(dir);
      Path aside = diedReplacing(dir, id); // holds old-part
      RunManifest old = new RunManifest(java.util.Map.of("k", "v"), List.of(), List.of("r0"), java.util.Map.of());
      Files.writeString(aside.resolve("part-aaaaaaaa-r-00000.parquet"), "new"); // moved in by the append
      Path staging = dir.resolve(".out" + OutputCommit.STAGING + id);
      Files.createDirectories(staging);
      Files.writeString(staging.resolve("_volpool_summary.json"), "{}");
      if (pastCommit) {
        Files.writeString(aside.resolve(RunManifest.FILE), old.plus(List.of(), id).toJson());
      } else {
        Files.writeString(aside.resolve(RunManifest.FILE + ".before-" + id), old.toJson());
        Files.writeString(staging.resolve(RunManifest.FILE), old.plus(List.of(), id).toJson());
      }
      Files.writeString(dir.resolve(".out" + OutputCommit.STAGING + id + RenameCommit.JOURNAL),
          "{\"format\":1,\"moved_in\":[\"part-aaaaaaaa-r-00000.parquet\"]}");
      OutputCommit.recover(dir.resolve("out").toString(), CONF);
      Path out = dir.resolve("out");
      RunManifest now = RunManifest.read(org.apache.hadoop.fs.FileSystem.getLocal(CONF),
          new org.apache.hadoop.fs.Path(out.toUri()));
      if (pastCommit) {
        assertThat(names(out)).as("finished").contains("old-part", "part-aaaaaaaa-r-00000.parquet",
            "_volpool_summary.json");
        assertThat(now.runs()).containsExactly("r0", id);
      } else {
        assertThat(names(out)).as("undone").containsExactlyInAnyOrder("old-part", RunManifest.FILE);
        assertThat(now.runs()).as("the output's manifest back").containsExactly("r0");
      }
      assertThat(names(dir)).noneMatch(n -> n.endsWith(RenameCommit.JOURNAL) || n.endsWith(RenameCommit.REPLACED));
    }
    // another output made while the append's was moved aside: nothing is removed, the run is refused
    Path dir = tmp.resolve("both");
    Files.createDirectories(dir.resolve("out"));
    Path aside = diedReplacing(dir, id);
    Files.writeString(dir.resolve(".out" + OutputCommit.STAGING + id + RenameCommit.JOURNAL),
        "{\"format\":1,\"moved_in\":[]}");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> OutputCommit.recover(dir.resolve("out").toString(), CONF))
        .hasMessageContaining("holds the output an appending run").hasMessageContaining("Nothing was removed");
    assertThat(aside.resolve("old-part")).exists();
  }

  /** A run that died in its commit: staging and owner left, the old output moved aside as .replaced. */
  static Path diedReplacing(Path tmp, String id) throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    fakeRun(tmp, id, InetAddress.getLocalHost().getHostName(), gone.pid(), "2026-01-01T00:00:00Z", 0);
    Path replaced = tmp.resolve(".out" + OutputCommit.STAGING + id + RenameCommit.REPLACED);
    Files.createDirectories(replaced);
    Files.writeString(replaced.resolve("old-part"), "old");
    return replaced;
  }

  @Test
  void aRunKilledBetweenItsTwoRenamesLosesNoOutput(@TempDir Path tmp) throws Exception {
    // killed after moving the old output aside, before its own landed: the old output comes back
    Path replaced = diedReplacing(tmp, "died-mid-replace");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> OutputCommit.prepare(tmp.resolve("out").toString(), false,
        CONF)).as("the old output is back, so errorifexists finds it").hasMessageContaining("already exists");
    assertThat(names(tmp.resolve("out"))).containsExactly("old-part");
    OutputCommit o = OutputCommit.prepare(tmp.resolve("out").toString(), true, CONF);
    o.abort();
    assertThat(replaced).doesNotExist();
    assertThat(names(tmp.resolve("out"))).containsExactly("old-part");
    assertThat(names(tmp)).as("the dead run's staging and owner file are gone too").containsExactly("out");
  }

  @Test
  void aRunKilledAfterItsOutputLandedLeavesNoOldOutputBehind(@TempDir Path tmp) throws Exception {
    Path replaced = diedReplacing(tmp, "died-after-landing");
    Files.createDirectories(tmp.resolve("out"));
    Files.writeString(tmp.resolve("out/new-part"), "new");
    OutputCommit o = OutputCommit.prepare(tmp.resolve("out").toString(), true, CONF);
    assertThat(replaced).as("removed by the next run, at its start").doesNotExist();
    o.writeText("newer", "x");
    o.commit();
    assertThat(names(tmp)).containsExactly("out");
    assertThat(names(tmp.resolve("out"))).containsExactly("newer");
  }
}
