package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job's JVM killed (SIGKILL) at random moments of a Parquet and an .npy run: the output then
 * either does not exist or is complete, and a rerun with overwrite gives output identical to an
 * uninterrupted run and leaves no staging folder, owner file or lock behind.
 */
class CrashTest {
  static final int KILLS = 2;

  static String sha(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  /** id -> digest of shape and data, for every row of a Parquet output; null when there is no output. */
  static Map<String, String> parquetChecksum(Path out) throws Exception {
    if (!Files.exists(out)) {
      return null;
    }
    Map<String, String> m = new TreeMap<>();
    for (Row r : SparkTests.spark().read().parquet(out.toString()).collectAsList()) {
      m.put(r.getString(0), r.getList(1) + ":" + sha((byte[]) r.get(3)));
    }
    return m;
  }

  /** relative path -> digest of each .npy output file; null when there is no output. */
  static Map<String, String> npyChecksum(Path out) throws Exception {
    if (!Files.exists(out)) {
      return null;
    }
    Map<String, String> m = new TreeMap<>();
    try (Stream<Path> s = Files.walk(out)) {
      for (Path p : s.filter(p -> p.toString().endsWith(".npy")).toList()) {
        m.put(out.relativize(p).toString(), sha(Files.readAllBytes(p)));
      }
    }
    return m;
  }

  static void deleteTree(Path p) throws Exception {
    if (Files.exists(p)) {
      try (Stream<Path> s = Files.walk(p)) {
        for (Path q : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.delete(q);
        }
      }
    }
  }

  /** Tasks committed into the staging folder of {@code out} (FileOutputCommitter: _temporary/0/task_*). */
  static int committedTasks(Path out) throws Exception {
    int n = 0;
    try (Stream<Path> s = Files.list(out.getParent())) {
      for (Path staging : s.filter(p -> p.getFileName().toString().startsWith("." + out.getFileName() + ".volpool-staging-")
          && Files.isDirectory(p)).toList()) {
        Path attempts = staging.resolve("_temporary/0");
        if (Files.isDirectory(attempts)) {
          try (Stream<Path> t = Files.list(attempts)) {
            n += (int) t.filter(p -> p.getFileName().toString().startsWith("task_")).count();
          }
        }
      }
    } catch (java.nio.file.NoSuchFileException e) {
      return 0; // the parent is made when the run starts
    }
    return n;
  }

  static List<String> leftovers(Path parent) throws Exception {
    try (Stream<Path> s = Files.list(parent)) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.contains("volpool-staging") || n.contains("volpool-commit")).toList();
    }
  }

  void crashAndRerun(Path tmp, Map<String, String> conf, boolean npy) throws Exception {
    Path out = Path.of(conf.get("spark.volpool.output"));
    long t0 = System.nanoTime();
    ChildJvm.Child clean = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("clean.log"));
    assertThat(clean.waitFor(300)).as(clean.output()).isZero();
    long millis = (System.nanoTime() - t0) / 1_000_000;
    Map<String, String> want = npy ? npyChecksum(out) : parquetChecksum(out);
    assertThat(want).isNotEmpty();
    long seed = Long.getLong("volpool.crash.seed", System.nanoTime());
    System.out.println("crash test: seed " + seed + ", clean run " + millis + " ms");
    SplittableRandom r = new SplittableRandom(seed);
    int late = 0;
    for (int k = 0; k < KILLS; k++) {
      // no old output: what is there after the kill is what the killed run left
      deleteTree(out);
      ChildJvm.Child run = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("kill" + k + ".log"));
      long started = System.nanoTime();
      // the kill lands at a known point: once a task has committed into the staging folder (mid-run),
      // then, the second time, a little later still
      while (committedTasks(out) == 0) {
        assertThat(run.process().isAlive()).as("the run ended before any task committed: no kill point; "
            + run.output()).isTrue();
        assertThat(System.nanoTime() - started).as("no task committed within 300 s").isLessThan(300_000_000_000L);
        Thread.sleep(10);
      }
      long later = k == 0 || late > 0 ? 0 : r.nextLong(300);
      Thread.sleep(later);
      if (later > 0 && Files.exists(out)) {
        // the run ended (published) within the delay, before the kill: no mid-run point this time. Let it finish and
        // kill again right at the first task commit (a run of 24 small .npy files can end 230 ms after it)
        assertThat(run.waitFor(300)).as(run.output()).isZero();
        System.out.println("crash test: the run published within " + later + " ms of its first task commit; this kill"
            + " goes again at the commit");
        assertThat(++late).as("kills that came too late").isLessThanOrEqualTo(KILLS);
        k--;
        continue;
      }
      int tasks = committedTasks(out);
      assertThat(run.process().isAlive()).as("the run is still running at the kill").isTrue();
      assertThat(out).as("the output is not in place before the kill").doesNotExist();
      run.process().destroyForcibly().waitFor();
      Map<String, String> got = npy ? npyChecksum(out) : parquetChecksum(out);
      System.out.println("crash test: killed " + later + " ms after the first task commit, with " + tasks
          + " task(s) committed: output " + (got == null ? "absent" : "complete"));
      assertThat(got).as("after a kill mid-run the output is absent").isNull();
      ChildJvm.Child rerun = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("rerun" + k + ".log"));
      assertThat(rerun.waitFor(300)).as(rerun.output()).isZero();
      assertThat(npy ? npyChecksum(out) : parquetChecksum(out)).as("rerun after the kill").isEqualTo(want);
      assertThat(leftovers(out.getParent())).as("nothing of the killed run left beside the output").isEmpty();
    }
  }

  @Test
  void killedParquetRunsLeaveNothingHalfDone(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), in.toString(), 2048, 8);
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "parquet", tmp.resolve("out/pooled"));
    conf.put("spark.volpool.output.mode", "overwrite");
    conf.put("spark.volpool.fused.weights", Path.of("../conf/models/fused_seed.safetensors").toAbsolutePath().toString());
    conf.put("spark.volpool.device", "cpu");
    crashAndRerun(tmp, conf, false);
  }

  @Test
  void killedNpyRunsLeaveNothingHalfDone(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    for (int i = 0; i < 24; i++) {
      Files.createDirectories(in.resolve("d" + i % 4));
      Files.copy(JobEndToEndTest.SEED.dir().resolve("input.npy"), in.resolve("d" + i % 4 + "/v" + i + ".npy"));
    }
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "npy", tmp.resolve("out/pooled"));
    conf.put("spark.volpool.output.mode", "overwrite");
    conf.put("spark.volpool.device", "cpu");
    crashAndRerun(tmp, conf, true);
  }
}
