package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.job.commit.KillPoints;
import io.volpool.op.VolumeShape;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.spark.sql.functions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hardening round 3: what a hostile user did to append and resume, and to long jobs that fail,
 * each as the user did it. The kill-point matrix ({@link KillPointMatrixTest}) stops runs at every step.
 */
class HardeningRound3Test {
  static Map<String, String> identity(Path in, Path out, String... more) {
    Map<String, String> conf = HardeningTest.identity(in, out, "device", "cpu");
    conf.putAll(SparkTests.conf(more));
    return conf;
  }

  /** One Parquet file per volume, {@code <id>.parquet}, in {@code dir}. */
  static void volumes(Path tmp, Path dir, String... ids) throws Exception {
    Files.createDirectories(dir);
    for (String id : ids) {
      Path flat = tmp.resolve("flat-" + id + "-" + System.nanoTime());
      HardeningTest.volumes(id).coalesce(1).write().parquet(flat.toString());
      try (var s = Files.list(flat)) {
        for (Path p : s.filter(p -> p.getFileName().toString().endsWith(".parquet")).toList()) {
          Files.copy(p, dir.resolve(id + ".parquet"));
        }
      }
    }
  }

  /** The ids of an output's rows, duplicates kept, sorted. */
  static List<String> ids(Path out) {
    List<String> ids = new ArrayList<>(SparkTests.spark().read().option("recursiveFileLookup", "true")
        .parquet(out.toString()).select("id").as(
        org.apache.spark.sql.Encoders.STRING()).collectAsList());
    ids.sort(null);
    return ids;
  }

  static Map<?, ?> status(Path out) throws Exception {
    return RunStatus.read(RunStatus.path(new org.apache.hadoop.fs.Path(out.toString())),
        new org.apache.hadoop.conf.Configuration());
  }

  // A. an append killed in its commit left the output moved aside: the next append recovers it before it plans
  @Test
  void anAppendNeverPlansAgainstAnOutputMovedAside(@TempDir Path tmp) throws Exception {
    for (boolean npy : new boolean[] {false, true}) {
      Path in = tmp.resolve(npy + "/in");
      Path out = tmp.resolve(npy + "/out");
      Map<String, String> conf;
      if (npy) {
        Files.createDirectories(in);
        for (String n : List.of("a", "b", "c")) {
          Files.write(in.resolve(n + ".npy"), AppendTest.concat(io.volpool.format.Npy.header(new long[] {1, 4, 4, 4}),
              NpyRangesTest.values("<f4", 64, n.hashCode())));
        }
        conf = identity(in, out, "output.mode", "append", "input.format", "npy", "output.format", "npy");
      } else {
        volumes(tmp, in, "a", "b", "c");
        conf = identity(in, out, "output.mode", "append");
      }
      SparkTests.Result first = SparkTests.run(conf);
      assertThat(first.code()).as(first.err()).isZero();
      Object before = npy ? CrashTest.npyChecksum(out) : ids(out);
      // as a SIGKILL between the commit's renames leaves it (the repro without timing)
      Files.move(out, out.resolveSibling(".out.volpool-staging-00000000-0000-0000-0000-000000000000.replaced"));
      SparkTests.Result again = SparkTests.run(conf);
      assertThat(again.code()).as(again.err()).isZero();
      assertThat(again.out() + again.err()).contains("nothing new");
      assertThat(npy ? CrashTest.npyChecksum(out) : ids(out)).as("each volume once").isEqualTo(before);
      assertThat(CrashTest.leftovers(out.getParent())).isEmpty();
    }
  }

  // B. two appends at once: the one that commits second finds the output changed since it planned, and refuses
  @Test
  void twoAppendsAtOnceAddEachVolumeOnce(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Path out = tmp.resolve("out");
    volumes(tmp, in.resolve("day=1"), "a", "b");
    Map<String, String> conf = identity(in, out, "output.mode", "append");
    for (boolean firstAppend : new boolean[] {true, false}) {
      if (!firstAppend) {
        volumes(tmp, in.resolve("day=2"), "c", "d");
      }
      // the child plans, then waits at its job commit while this run plans, runs and commits
      ChildJvm.Child slow = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("slow-" + firstAppend + ".log"),
          List.of("-D" + KillPoints.PROPERTY + "=" + KillPoints.JOB_COMMITTED + ":SLEEP=25"));
      long deadline = System.nanoTime() + 120_000_000_000L;
      while (!slow.output().contains("test point job_committed reached") && System.nanoTime() < deadline) {
        assertThat(slow.process().isAlive()).as(slow.output()).isTrue();
        Thread.sleep(100);
      }
      SparkTests.Result fast = SparkTests.run(conf);
      assertThat(fast.code()).as(fast.err()).isZero();
      assertThat(slow.waitFor(120)).as(slow.output()).isEqualTo(1);
      assertThat(slow.output()).contains("volpool: FAILED: another run changed " + "file:" + out)
          .contains("nothing of this run was added").contains("rerun the same command");
      assertThat(ids(out)).as("each volume once").isEqualTo(firstAppend ? List.of("a", "b") : List.of("a", "b", "c", "d"));
      assertThat(status(out).get("status")).as("the winner's status").isEqualTo("succeeded");
      assertThat(CrashTest.leftovers(out.getParent())).isEmpty();
    }
  }

  // C. an append never publishes an id the output holds: a renamed file, another copy of a volume across rows
  @Test
  void anAppendRefusesAVolumeTheOutputHolds(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Path out = tmp.resolve("out");
    volumes(tmp, in, "a", "b");
    Map<String, String> conf = identity(in, out, "output.mode", "append");
    assertThat(SparkTests.run(conf).code()).isZero();
    Files.copy(in.resolve("b.parquet"), in.resolve("b-renamed.parquet"));
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("bad record id=b: the output holds this volume already (part-")
        .contains("b-renamed.parquet row 0").contains("an append adds volumes, never a second copy of one");
    assertThat(ids(out)).isEqualTo(List.of("a", "b"));
    assertThat(status(out).get("status")).as("the refused run leaves the output's status").isEqualTo("succeeded");

    // volumes stored across rows: a new file holding another full copy of a volume the output holds
    Path rin = tmp.resolve("rin");
    Path rout = tmp.resolve("rout");
    AppendTest.acrossRows(tmp, rin, "one", "v", "w");
    Map<String, String> rconf = identity(rin, rout, "output.mode", "append");
    assertThat(SparkTests.run(rconf).code()).isZero();
    List<String> before = ids(rout);
    AppendTest.acrossRows(tmp, rin, "two", "v");
    SparkTests.Result rr = SparkTests.run(rconf);
    assertThat(rr.code()).as(rr.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(rr.err()).contains("bad record id=v: the output holds this volume already").contains("two-part-");
    assertThat(ids(rout)).isEqualTo(before);
  }

  // D. the output keeps one schema: new files are compared with the output's, not with the first input file
  @Test
  void anAppendRefusesFilesWithOtherColumnsThanTheOutput(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Path out = tmp.resolve("out");
    HardeningTest.volumes("a").withColumn("site", functions.lit(1L)).coalesce(1).write().parquet(in.resolve("a").toString());
    HardeningTest.volumes("b").withColumn("site", functions.lit(2L)).coalesce(1).write().parquet(in.resolve("b").toString());
    Map<String, String> conf = identity(in, out, "output.mode", "append");
    assertThat(SparkTests.run(conf).code()).isZero();
    CrashTest.deleteTree(in.resolve("a"));
    HardeningTest.volumes("c").withColumn("site", functions.lit("x")).coalesce(1).write().parquet(in.resolve("0").toString());
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("this input's volumes would be written with other columns than").contains("column 'site'");
    assertThat(SparkTests.spark().read().option("recursiveFileLookup", "true").parquet(out.toString()).schema()
        .apply("site").dataType().typeName())
        .isEqualTo("long");
    assertThat(ids(out)).isEqualTo(List.of("a", "b"));
  }

  /** One volume [2, 1024, 32, 32] in rows of 64 planes, a row group each (as examples/volumes_across_rows.py writes). */
  static void bigVolumeAcrossRows(Path file) throws Exception {
    VolumeShape s = new VolumeShape(2, 1024, 32, 32);
    Files.createDirectories(file.getParent());
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(file.toUri()))
        .withConf(new org.apache.hadoop.conf.Configuration()).withType(VolumesAcrossRowsTest.SCHEMA)
        .withRowGroupSize(256L << 10).withMinRowCountForPageSizeCheck(1).withMaxRowCountForPageSizeCheck(1).build()) {
      for (int d0 = 0; d0 < s.d(); d0 += 64) {
        w.write(VolumesAcrossRowsTest.row(new VolumesAcrossRowsTest.Part("vol", 7, s, d0, d0 + 64)));
      }
    }
  }

  // E. resume of a volume stored across rows and spread over tasks: the kept ranges' halo rows are not counted twice
  @Test
  void aSpreadVolumeAcrossRowsIsResumed(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    bigVolumeAcrossRows(in.resolve("vol.parquet"));
    Map<String, String> clean = SparkTests.conf("input", in.toString(), "output", tmp.resolve("clean").toString(),
        "pipeline", "avgpool3d", "avgpool3d.kernelSize", "3", "avgpool3d.stride", "2", "avgpool3d.padding", "1",
        "device", "cpu", "spark.sql.files.maxPartitionBytes", "256k");
    SparkTests.Result c = SparkTests.run(clean);
    assertThat(c.code()).as(c.err()).isZero();
    Object want = KillPointMatrixTest.contents(tmp.resolve("clean"), KillPointMatrixTest.Layout.ROWS);
    Path out = tmp.resolve("out");
    Map<String, String> resume = new java.util.HashMap<>(clean);
    resume.put("spark.volpool.output", out.toString());
    resume.put("spark.volpool.output.mode", "resume");
    ChildJvm.Child killed = ChildJvm.start("1g", "local[2]", resume, tmp.resolve("killed.log"),
        List.of("-D" + KillPoints.PROPERTY + "=" + KillPoints.HALF_TASKS));
    assertThat(killed.waitFor(300)).as(killed.output()).isEqualTo(137);
    SparkTests.Result r = SparkTests.run(resume);
    assertThat(r.code()).as(r.err()).isZero();
    var resumed = ResumeTest.summary(out).get("resumed");
    assertThat(resumed.get("tasks_kept").asInt()).as(String.valueOf(resumed)).isPositive();
    assertThat(KillPointMatrixTest.contents(out, KillPointMatrixTest.Layout.ROWS)).isEqualTo(want);
  }

  // F. a kept task is trusted by its footer's task number, not by its row count
  @Test
  void aKeptTaskHoldingAnotherTasksPartRunsAgain(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    volumes(tmp, in, "a", "b", "c", "d", "e", "f");
    Map<String, String> conf = identity(in, tmp.resolve("clean"), "spark.sql.files.maxPartitionBytes", "4096",
        "spark.sql.files.openCostInBytes", "4096");
    assertThat(SparkTests.run(conf).code()).isZero();
    List<String> want = ids(tmp.resolve("clean"));
    assertThat(want).hasSize(6);
    Path out = tmp.resolve("out");
    conf.put("spark.volpool.output", out.toString());
    conf.put("spark.volpool.output.mode", "resume");
    ChildJvm.Child killed = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("killed.log"),
        List.of("-D" + KillPoints.PROPERTY + "=" + KillPoints.HALF_TASKS));
    assertThat(killed.waitFor(300)).as(killed.output()).isEqualTo(137);
    Path staging;
    try (var s = Files.list(tmp)) {
      staging = s.filter(p -> p.getFileName().toString().startsWith(".out.volpool-staging-") && Files.isDirectory(p))
          .findFirst().orElseThrow().resolve("_temporary/0");
    }
    List<Path> tasks;
    try (var s = Files.list(staging)) {
      tasks = s.filter(p -> p.getFileName().toString().startsWith("task_")).sorted().toList();
    }
    assertThat(tasks.size()).isGreaterThanOrEqualTo(2);
    // a committed part copied over another task's: as many rows, other volumes
    Path from;
    Path to;
    try (var a = Files.list(tasks.get(0)); var b = Files.list(tasks.get(1))) {
      from = a.filter(p -> p.toString().endsWith(".parquet")).findFirst().orElseThrow();
      to = b.filter(p -> p.toString().endsWith(".parquet")).findFirst().orElseThrow();
    }
    Files.copy(from, to, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    ChildJvm.Child r = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("resumed.log"));
    assertThat(r.waitFor(300)).as(r.output()).isZero();
    assertThat(r.output()).containsPattern("in task \\d+'s folder was written by task \\d+")
        .containsPattern("task \\d+ of run \\S+ runs again");
    assertThat(ids(out)).as("each volume once, none missing").isEqualTo(want);
  }

  // G. SIGTERM during the commit: the commit finishes and the run succeeds; before it: rolled back, 143, both agree
  @Test
  void aSigtermDuringTheCommitFinishesItAndBeforeItRollsBack(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    volumes(tmp, in.resolve("day=1"), "a", "b");
    Path out = tmp.resolve("out");
    Map<String, String> conf = identity(in, out, "output.mode", "overwrite");
    assertThat(SparkTests.run(conf).code()).isZero();
    volumes(tmp, in.resolve("day=2"), "c");
    ChildJvm.Child before = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("before.log"),
        List.of("-D" + KillPoints.PROPERTY + "=" + KillPoints.JOB_COMMITTED + ":TERM"));
    assertThat(before.waitFor(120)).as(before.output()).isEqualTo(143);
    assertThat(before.output()).contains("volpool: FAILED: stopped by SIGTERM while the job ran (exit code 143)");
    assertThat(status(out).get("exit_code")).isEqualTo(143);
    assertThat(ids(out)).as("the old output, whole").isEqualTo(List.of("a", "b"));

    ChildJvm.Child during = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("during.log"),
        List.of("-D" + KillPoints.PROPERTY + "=" + KillPoints.MOVED_IN + ":TERM"));
    assertThat(during.waitFor(120)).as(during.output()).isZero();
    assertThat(during.output()).contains("the commit finished, so the run succeeded (exit 0)")
        .contains("status        succeeded");
    assertThat(status(out).get("exit_code")).isEqualTo(0);
    assertThat(ids(out)).as("the new output").isEqualTo(List.of("a", "b", "c"));
    assertThat(CrashTest.leftovers(tmp)).isEmpty();
  }

  // H. a named pipe, socket or device is refused, never read (reading a pipe waits for ever)
  @Test
  void namedPipesAndDevicesAreRefused(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    volumes(tmp, in, "a");
    Path npyIn = tmp.resolve("npy");
    Files.createDirectories(npyIn);
    for (Path fifo : List.of(in.resolve("pipe.parquet"), npyIn.resolve("x.npy"))) {
      assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
    }
    long t0 = System.nanoTime();
    SparkTests.Result p = SparkTests.run(identity(in, tmp.resolve("out")));
    SparkTests.Result n = SparkTests.run(identity(npyIn, tmp.resolve("out2"), "input.format", "npy", "output.format", "npy"));
    SparkTests.Result w = SparkTests.run(identity(in, tmp.resolve("out3"), "pipeline", "fused", "fused.weights", "/dev/zero"));
    for (SparkTests.Result r : List.of(p, n)) {
      assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
      assertThat(r.err()).contains("is not a regular file (a named pipe, socket or device)");
    }
    assertThat(w.code()).as(w.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(w.err()).contains("/dev/zero is not a regular file");
    assertThat((System.nanoTime() - t0) / 1e9).as("refused, not waited on").isLessThan(60);
  }

  // I. a path with a control character (a newline could forge a line of the owner file) is refused
  @Test
  void pathsWithControlCharactersAreRefused(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    volumes(tmp, in, "a");
    SparkTests.Result r = SparkTests.run(identity(in, Path.of(tmp + "/out\nended=x")));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("spark.volpool.output holds a control character");
    assertThat(tmp.resolve("out\nended=x")).doesNotExist();
  }

  // 1. a failed run keeps its committed tasks whatever its mode, says how many and the exact rerun; the resume
  // replaces the output when the failed run was replacing it
  @Test
  void aFailedRunKeepsItsWorkForAResume(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    volumes(tmp, in, "a", "b", "c", "d", "e", "f");
    Path out = tmp.resolve("out");
    Map<String, String> conf = identity(in, out, "spark.sql.files.maxPartitionBytes", "4096",
        "spark.sql.files.openCostInBytes", "4096");
    List<String> want = new ArrayList<>(List.of("a", "b", "c", "d", "e", "f"));
    for (String mode : List.of("errorifexists", "overwrite")) {
      if (mode.equals("overwrite")) {
        // new input: the output made above is to be replaced (with the same input it would be complete already)
        volumes(tmp, in, "g");
        want.add("g");
      }
      conf.put("spark.volpool.output.mode", mode);
      ChildJvm.Child stopped = ChildJvm.start("1g", "local[2]", conf, tmp.resolve(mode + ".log"),
          List.of("-D" + KillPoints.PROPERTY + "=" + KillPoints.HALF_TASKS + ":TERM"));
      assertThat(stopped.waitFor(120)).as(stopped.output()).isEqualTo(143);
      assertThat(stopped.output()).containsPattern("volpool: \\d of \\d task\\(s\\) committed before the failure are kept")
          .contains("rerun the same command with --conf spark.volpool.output.mode=resume");
      Map<String, String> resume = new java.util.HashMap<>(conf);
      resume.put("spark.volpool.output.mode", "resume");
      SparkTests.Result r = SparkTests.run(resume);
      assertThat(r.code()).as(r.err()).isZero();
      assertThat(ResumeTest.summary(out).get("resumed").get("tasks_kept").asInt()).isPositive();
      assertThat(ids(out)).isEqualTo(want);
      assertThat(CrashTest.leftovers(tmp)).isEmpty();
    }
    // a resume that finds nothing to take over says so
    CrashTest.deleteTree(out);
    conf.put("spark.volpool.output.mode", "resume");
    ChildJvm.Child fresh = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("fresh.log"));
    assertThat(fresh.waitFor(120)).as(fresh.output()).isZero();
    assertThat(fresh.output()).contains("no unfinished run on").contains("every task runs");
    // 4. a resume with nothing to do: no ERROR line, no trace, for an Airflow retry to read
    ChildJvm.Child noop = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("noop.log"));
    assertThat(noop.waitFor(120)).as(noop.output()).isZero();
    assertThat(noop.output()).contains("nothing to resume").doesNotContain(" ERROR ").doesNotContain("Exception");
  }

  // 5. a signal while Spark starts: the FAILED line, the status file and the exit code agree
  @Test
  void aSignalWhileSparkStartsIsReported(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    volumes(tmp, in, "a");
    for (String sig : List.of("INT", "TERM")) {
      Path out = tmp.resolve("out-" + sig);
      ChildJvm.Child c = ChildJvm.start("1g", "local[2]", identity(in, out), tmp.resolve(sig + ".log"));
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (c.output().isBlank() && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertThat(new ProcessBuilder("kill", "-" + sig, String.valueOf(c.process().pid())).start().waitFor()).isZero();
      int code = c.waitFor(60);
      int want = sig.equals("INT") ? 130 : 143;
      assertThat(code).as(c.output()).isEqualTo(want);
      assertThat(c.output()).contains("volpool: FAILED: stopped by SIG" + sig);
      assertThat(status(out).get("exit_code")).as(c.output()).isEqualTo(want);
    }
  }
}
