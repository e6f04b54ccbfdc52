package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Spark standalone cluster (a Master and two Workers of one core each, started from the
 * build's Spark jars by scripts/standalone-cluster.sh) runs the spark-submit jar through SparkSubmit:
 * both workers run tasks and the output equals a local[*] run's; a GPU request on these GPU-less
 * workers fails with volpool's message instead of waiting for ever. Every process is stopped, also
 * when a test fails. Runs in mvn verify (failsafe), after the jar is built.
 */
class ClusterIT {
  static Path dir;
  static int port;
  static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  static String run(List<String> cmd, Path log, long seconds, int[] code) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    Process p = pb.start();
    if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(cmd + " still running after " + seconds + " s:\n" + Files.readString(log));
    }
    code[0] = p.exitValue();
    return Files.readString(log, StandardCharsets.UTF_8);
  }

  @BeforeAll
  static void startCluster(@TempDir Path tmp) throws Exception {
    dir = tmp.resolve("cluster");
    port = freePort();
    int[] code = new int[1];
    String out = run(List.of("bash", ROOT.resolve("scripts/standalone-cluster.sh").toString(), "start", dir.toString(),
        String.valueOf(port), "2", "1"), tmp.resolve("start.log"), 120, code);
    assertThat(code[0]).as(out).isZero();
  }

  @AfterAll
  static void stopCluster() throws Exception {
    if (dir != null) {
      new ProcessBuilder("bash", ROOT.resolve("scripts/standalone-cluster.sh").toString(), "stop", dir.toString())
          .inheritIO().start().waitFor(60, TimeUnit.SECONDS);
    }
  }

  static String submit(Path log, int[] code, String... conf) throws Exception {
    return run(submitCommand(dir, port, conf), log, 300, code);
  }

  static List<String> submitCommand(Path clusterDir, int clusterPort, String... conf) {
    List<String> cmd = new ArrayList<>(List.of("bash", ROOT.resolve("scripts/standalone-cluster.sh").toString(), "submit",
        clusterDir.toString(), String.valueOf(clusterPort)));
    for (String c : conf) {
      cmd.add("--conf");
      cmd.add(c);
    }
    // the sample pipeline (conf/local.properties') unless the test names one; the pipeline has no default
    if (java.util.Arrays.stream(conf).noneMatch(c -> c.startsWith("spark.volpool.pipeline="))) {
      cmd.add("--conf");
      cmd.add("spark.volpool.pipeline=fused,avgpool3d");
    }
    // the reference pool (avgpool3d has no default kernel)
    SparkTests.REFERENCE_POOL.forEach((k, v) -> {
      cmd.add("--conf");
      cmd.add(k + "=" + v);
    });
    return cmd;
  }

  /** The job's settings on the cluster: sample input, the seed model, a shared-filesystem output. */
  static String[] jobConf(Path in, Path out, Path events, String... more) {
    List<String> c = new ArrayList<>(List.of("spark.volpool.input=" + in, "spark.volpool.output=" + out,
        "spark.volpool.fused.weights=" + ROOT.resolve("conf/models/fused_seed.safetensors"), "spark.volpool.device=cpu",
        "spark.volpool.output.sharedFilesystem=true", "spark.eventLog.enabled=true",
            "spark.eventLog.compress=false", "spark.eventLog.dir=" + events.toUri()));
    c.addAll(List.of(more));
    return c.toArray(new String[0]);
  }

  /** The local run of the same job: what the cluster's output must equal. */
  static Map<String, String> localChecksum(Path in, Path out) throws Exception {
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "parquet", out);
    conf.put("spark.volpool.fused.weights", ROOT.resolve("conf/models/fused_seed.safetensors").toString());
    conf.put("spark.volpool.device", "cpu");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isZero();
    return checksum(out);
  }

  /** id -> shape and digest of every row of an output, in any folder below it (not partition-named ones too). */
  static Map<String, String> checksum(Path out) throws Exception {
    Map<String, String> m = new java.util.TreeMap<>();
    List<org.apache.spark.sql.Row> rows = SparkTests.spark().read().option("recursiveFileLookup", "true")
        .parquet(out.toString()).select("id", "shape", "data").collectAsList();
    for (org.apache.spark.sql.Row r : rows) {
      assertThat(m.put(r.getString(0), r.getList(1) + ":" + java.util.Arrays.hashCode((byte[]) r.get(2))))
          .as("id " + r.getString(0) + " once in " + out).isNull();
    }
    return m;
  }

  /** The executors whose tasks ended, as the event log under {@code events} records them. */
  static java.util.Set<String> taskExecutors(Path events) throws IOException {
    java.util.Set<String> ids = new java.util.HashSet<>();
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"Event\":\"SparkListenerTaskEnd\".*?\"Executor ID\":"
        + "\"([0-9]+)\"").matcher(eventLog(events));
    while (m.find()) {
      ids.add(m.group(1));
    }
    return ids;
  }

  static String eventLog(Path events) throws IOException {
    StringBuilder sb = new StringBuilder();
    try (Stream<Path> s = Files.walk(events)) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        sb.append(Files.readString(p));
      }
    }
    return sb.toString();
  }

  /** Executors of the cluster in {@code clusterDir} (their working folders are below it), by pid. */
  static List<Long> executors(Path clusterDir) throws IOException {
    List<Long> out = new ArrayList<>();
    ProcessHandle.allProcesses().forEach(h -> {
      String args = h.info().commandLine().orElse("");
      if (args.contains("CoarseGrainedExecutorBackend")) {
        try {
          Path cwd = Path.of("/proc", String.valueOf(h.pid()), "cwd").toRealPath();
          if (cwd.startsWith(clusterDir.toRealPath())) {
            out.add(h.pid());
          }
        } catch (IOException e) {
          // gone
        }
      }
    });
    return out;
  }

  // a lost executor: Spark reruns its tasks, and the output holds each task's committed files only
  @Test
  void anExecutorKilledMidTaskLeavesTheOutputOfACleanRun(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    // enough work that the kill lands while tasks run (the progress line comes every 5 s after the first five)
    SampleData.write(SparkTests.spark(), in.toString(), 4000, 8);
    Map<String, String> expected = localChecksum(in, tmp.resolve("local"));
    Path out = tmp.resolve("out");
    Path events = Files.createDirectories(tmp.resolve("events"));
    Path log = tmp.resolve("kill.log");
    Process p = new ProcessBuilder(submitCommand(dir, port, jobConf(in, out, events,
        "spark.executor.heartbeatInterval=1s"))).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long killed = -1;
    long deadline = System.nanoTime() + 240_000_000_000L;
    java.util.regex.Pattern progress = java.util.regex.Pattern.compile("volpool progress: ([0-9,]+) of");
    while (p.isAlive() && killed < 0 && System.nanoTime() < deadline) {
      java.util.regex.Matcher m = progress.matcher(Files.readString(log));
      long done = 0;
      while (m.find()) {
        done = Long.parseLong(m.group(1).replace(",", ""));
      }
      List<Long> ex = executors(dir);
      if (done > 200 && !ex.isEmpty()) {
        killed = ex.get(0);
        new ProcessBuilder("kill", "-9", String.valueOf(killed)).start().waitFor();
      }
      Thread.sleep(100);
    }
    assertThat(killed).as("an executor was killed mid-run: " + Files.readString(log)).isPositive();
    assertThat(p.waitFor(300, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    String text = Files.readString(log);
    assertThat(p.exitValue()).as(text).isZero();
    assertThat(eventLog(events)).as("the executor was lost while tasks ran").contains("\"Event\":\"SparkListenerExecutorRemoved\"")
        .contains("ExecutorLostFailure");
    assertThat(checksum(out)).hasSize(4000).isEqualTo(expected);
  }

  // speculation: the losing attempt's files never reach the output
  @Test
  void speculativeAttemptsThatLoseLeaveTheOutputOfACleanRun(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    var hc = SparkTests.spark().sparkContext().hadoopConfiguration();
    String block = hc.get("parquet.block.size");
    hc.setLong("parquet.block.size", 1L << 30); // the large file in one row group: one long task
    try {
      SampleData.write(SparkTests.spark(), in.resolve("large").toString(), 1500, 1, 0);
    } finally {
      if (block == null) {
        hc.unset("parquet.block.size");
      } else {
        hc.set("parquet.block.size", block);
      }
    }
    SampleData.write(SparkTests.spark(), in.resolve("small").toString(), 500, 5, 1500);
    Map<String, String> expected = localChecksum(in, tmp.resolve("local"));
    // a cluster of its own, whose workers are two hosts (Spark never speculates on the host of the first attempt)
    Path cluster = tmp.resolve("spec-cluster");
    int specPort = freePort();
    ProcessBuilder start = new ProcessBuilder("bash", ROOT.resolve("scripts/standalone-cluster.sh").toString(), "start",
        cluster.toString(), String.valueOf(specPort), "2", "1");
    start.environment().put("DISTINCT_HOSTS", "1");
    start.redirectErrorStream(true).redirectOutput(tmp.resolve("spec-start.log").toFile());
    try {
      assertThat(start.start().waitFor()).as(Files.readString(tmp.resolve("spec-start.log"))).isZero();
      Path out = tmp.resolve("out");
      Path events = Files.createDirectories(tmp.resolve("events"));
      int[] code = new int[1];
      // both executors before any task: with the second one late (7.7 s under CI's load), the small task started
      // late and ended after the large one, and nothing was ever slow enough to speculate on
      String log = run(submitCommand(cluster, specPort, jobConf(in, out, events, "spark.cores.max=2",
          "spark.scheduler.minRegisteredResourcesRatio=1.0", "spark.scheduler.maxRegisteredResourcesWaitingTime=120s",
          "spark.speculation=true",
          "spark.speculation.multiplier=1.01", "spark.speculation.quantile=0.1", "spark.speculation.interval=50ms",
          "spark.speculation.minTaskRuntime=100ms", "spark.speculation.efficiency.enabled=false",
          "spark.sql.files.maxPartitionBytes=1g")), tmp.resolve("spec.log"), 300, code);
      assertThat(code[0]).as(log).isZero();
      assertThat(eventLog(events)).as("a speculative attempt ran").contains("\"Speculative\":true");
      assertThat(checksum(out)).hasSize(2000).isEqualTo(expected);
    } finally {
      new ProcessBuilder("bash", ROOT.resolve("scripts/standalone-cluster.sh").toString(), "stop", cluster.toString())
          .inheritIO().start().waitFor(60, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  static int tasksRunBy(Path worker) throws IOException {
    int n = 0;
    try (Stream<Path> s = Files.walk(worker)) {
      for (Path p : s.filter(p -> p.getFileName().toString().equals("stderr")).toList()) {
        n += (int) Files.readAllLines(p).stream().filter(l -> l.contains("Running task")).count();
      }
    }
    return n;
  }

  /**
   * The stderr of every executor that {@code worker} ran for the application the submit log names (the job's start line
   * says it): the workers keep earlier tests' applications, whose executors must not stand in for this one's.
   */
  static List<String> executorLogs(Path worker, String submitLog) throws IOException {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("application (app-[0-9]+-[0-9]+)").matcher(submitLog);
    assertThat(m.find()).as("the job's start line names its application: " + submitLog).isTrue();
    Path app = worker.resolve(m.group(1));
    try (Stream<Path> s = Files.walk(app)) {
      List<String> logs = new ArrayList<>();
      for (Path p : s.filter(f -> f.getFileName().toString().equals("stderr")).sorted().toList()) {
        logs.add(Files.readString(p));
      }
      assertThat(logs).as("executor stderr of " + app).isNotEmpty();
      return logs;
    }
  }

  @Test
  void bothWorkersRunTasksAndTheOutputEqualsALocalRun(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), in.toString(), 512, 8);
    Path local = tmp.resolve("local");
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "parquet", local);
    conf.put("spark.volpool.fused.weights", ROOT.resolve("conf/models/fused_seed.safetensors").toString());
    conf.put("spark.volpool.device", "cpu");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isZero();
    Path out = tmp.resolve("cluster-out");
    int[] code = new int[1];
    String log = submit(tmp.resolve("submit.log"), code, "spark.volpool.input=" + in,
        "spark.volpool.output=" + out, "spark.volpool.fused.weights=" + conf.get("spark.volpool.fused.weights"),
        "spark.volpool.device=auto", "spark.volpool.output.sharedFilesystem=true",
        "spark.plugins=io.volpool.spark.VolpoolPlugin", "spark.volpool.gpu.pinnedPool.size=64m");
    assertThat(code[0]).as(log).isZero();
    assertThat(log).contains("volumes       512 in, 512 out");
    assertThat(tasksRunBy(dir.resolve("worker0"))).as("tasks on worker 0").isPositive();
    assertThat(tasksRunBy(dir.resolve("worker1"))).as("tasks on worker 1").isPositive();
    // the plugin warmed each executor when it started, with the job's settings: here no GPU, so the
    // CPU fallback of device=auto, chosen once, before the first task ended (the warm-up runs on a thread of its
    // own, which a first task waits for; on a loaded machine the task may start first)
    for (String w : List.of("worker0", "worker1")) {
      for (String stderr : executorLogs(dir.resolve(w), log)) {
        assertThat(stderr).as(w).contains("volpool warm-up done in").contains("nothing to warm on cpu");
        assertThat(stderr.indexOf("volpool warm-up done")).as(w + ": the warm-up before the first task ended")
            .isLessThan(stderr.indexOf("Finished task"));
      }
    }
    assertThat(CrashTest.parquetChecksum(out)).isEqualTo(CrashTest.parquetChecksum(local));
  }

  /**
   * One volume stored across rows, larger than a task: its ranges of output planes are tasks, and
   * both workers run some of them; the output equals a local one-task run's bit for bit.
   */
  @Test
  void aVolumesRangesRunOnBothWorkersAndGiveTheOutputOfOneTask(@TempDir Path tmp) throws Exception {
    io.volpool.op.VolumeShape s = new io.volpool.op.VolumeShape(2, 1024, 32, 32); // 8 MiB in 9 rows
    VolumesAcrossRowsTest.write(tmp.resolve("in/x.parquet"), VolumesAcrossRowsTest.cut("big", 11, s, 100, 230, 300, 411,
        600, 700, 850, 900), org.apache.parquet.hadoop.metadata.CompressionCodecName.UNCOMPRESSED);
    Path local = tmp.resolve("local");
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "output", local.toString(),
        "pipeline", "avgpool3d", "device", "cpu"));
    assertThat(r.code()).as(r.err()).isZero();
    Path out = tmp.resolve("cluster-out");
    int[] code = new int[1];
    Path events = Files.createDirectories(tmp.resolve("events"));
    String log = submit(tmp.resolve("submit.log"), code, "spark.volpool.input=" + tmp.resolve("in"),
        "spark.volpool.output=" + out, "spark.volpool.pipeline=avgpool3d", "spark.volpool.device=cpu",
        "spark.volpool.output.sharedFilesystem=true", "spark.sql.files.maxPartitionBytes=1m",
        "spark.sql.files.openCostInBytes=0", "spark.eventLog.enabled=true", "spark.eventLog.compress=false",
        "spark.eventLog.dir=" + events.toUri(),
        // the ranges are short: tasks start once both executors are there, or the first one takes them all
        // the ratio counts against spark.cores.max (without it the driver expects 0 cores and waits for none)
        "spark.cores.max=2", "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime=120s", "spark.locality.wait=0");
    assertThat(code[0]).as(log).isZero();
    assertThat(log).contains("ranges of output planes in separate tasks").contains("volumes       1 in, 1 out");
    // the ranges' tasks ended on both executors (one a worker), as the event log records them
    java.util.Set<String> ranOn = taskExecutors(events);
    assertThat(ranOn).as("executors that ran ranges").hasSize(2);
    io.volpool.op.VolumeShape o = new io.volpool.op.VolumeShape(2, 512, 16, 16);
    VolumesAcrossRowsTest.assertBitIdentical(VolumesAcrossRowsTest.readOutput(out, Map.of("big", o)).get("big"),
        VolumesAcrossRowsTest.readOutput(local, Map.of("big", o)).get("big"), "ranges on the cluster against one local task");
  }

  /**
   * One .npy volume larger than a task, written as .npy to the shared filesystem: its ranges run on both
   * executors, each writing its planes by position into the one staged file; the output equals a local
   * run with the volume in one task byte for byte.
   */
  @Test
  void anNpyVolumesRangesOnBothWorkersWriteOneNpyInPlace(@TempDir Path tmp) throws Exception {
    io.volpool.op.VolumeShape s = new io.volpool.op.VolumeShape(2, 1024, 32, 32); // 4 MiB of int16
    NpyRangesTest.writeNpy(tmp.resolve("in/big.npy"), "<i2", new long[] {s.c(), s.d(), s.h(), s.w()},
        NpyRangesTest.values("<i2", s.numel(), 9));
    Path local = tmp.resolve("local");
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", local.toString(), "output.format", "npy", "pipeline", "avgpool3d", "device", "cpu",
        "input.spreadVolumes", "false"));
    assertThat(r.code()).as(r.err()).isZero();
    Path out = tmp.resolve("cluster-out");
    int[] code = new int[1];
    Path events = Files.createDirectories(tmp.resolve("events"));
    String log = submit(tmp.resolve("submit.log"), code, "spark.volpool.input=" + tmp.resolve("in"),
        "spark.volpool.input.format=npy", "spark.volpool.output=" + out, "spark.volpool.output.format=npy",
        "spark.volpool.pipeline=avgpool3d", "spark.volpool.device=cpu", "spark.volpool.output.sharedFilesystem=true",
        "spark.sql.files.maxPartitionBytes=300k", "spark.sql.files.openCostInBytes=0", "spark.eventLog.enabled=true",
        "spark.eventLog.compress=false", "spark.eventLog.dir=" + events.toUri(),
        // the ratio counts against spark.cores.max (without it the driver expects 0 cores and waits for none)
        "spark.cores.max=2", "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime=120s", "spark.locality.wait=0");
    assertThat(code[0]).as(log).isZero();
    assertThat(log).contains("ranges of output planes in").contains("volumes       1 in, 1 out");
    java.util.Set<String> ranOn = taskExecutors(events);
    assertThat(ranOn).as("executors that wrote ranges").hasSize(2);
    NpyOutputInPlaceTest.assertSameFiles(local, out, "big.npy");
  }

  /**
   * A range task lost with its executor (SIGKILL once some of the volume's ranges have ended): Spark runs
   * it again elsewhere, and the output equals one local task's bit for bit: no range missing or twice.
   */
  @Test
  void aRangeTaskLostWithItsExecutorIsRunAgainAndTheOutputIsOneTasks(@TempDir Path tmp) throws Exception {
    io.volpool.op.VolumeShape s = new io.volpool.op.VolumeShape(2, 8192, 64, 64); // 256 MiB in 21 rows
    int[] cuts = new int[20];
    for (int i = 0; i < cuts.length; i++) {
      cuts[i] = 390 * (i + 1) + i % 3;
    }
    VolumesAcrossRowsTest.write(tmp.resolve("in/x.parquet"), VolumesAcrossRowsTest.cut("big", 13, s, cuts),
        org.apache.parquet.hadoop.metadata.CompressionCodecName.UNCOMPRESSED);
    Path local = tmp.resolve("local");
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "output", local.toString(),
        "pipeline", "avgpool3d", "device", "cpu"));
    assertThat(r.code()).as(r.err()).isZero();
    Path out = tmp.resolve("cluster-out");
    Path events = Files.createDirectories(tmp.resolve("events"));
    Path log = tmp.resolve("submit.log");
    List<String> cmd = submitCommand(dir, port, "spark.volpool.input=" + tmp.resolve("in"), "spark.volpool.output=" + out,
        "spark.volpool.pipeline=avgpool3d", "spark.volpool.device=cpu", "spark.volpool.output.sharedFilesystem=true",
        "spark.sql.files.maxPartitionBytes=1m", "spark.sql.files.openCostInBytes=0", "spark.eventLog.enabled=true",
        "spark.eventLog.compress=false", "spark.eventLog.dir=" + events.toUri(), "spark.executor.heartbeatInterval=1s",
        // the ratio counts against spark.cores.max (without it the driver expects 0 cores and waits for none)
        "spark.cores.max=2", "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime=120s", "spark.locality.wait=0");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long killed = -1;
    long deadline = System.nanoTime() + 240_000_000_000L;
    while (p.isAlive() && killed < 0 && System.nanoTime() < deadline) {
      // a few ranges have committed into the staging folder and more are running
      List<Long> ex = executors(dir);
      if (CrashTest.committedTasks(out) >= 3 && !ex.isEmpty()) {
        killed = ex.get(0);
        new ProcessBuilder("kill", "-9", String.valueOf(killed)).start().waitFor();
      }
      Thread.sleep(50);
    }
    assertThat(killed).as("an executor was killed while ranges ran: " + Files.readString(log)).isPositive();
    assertThat(p.waitFor(300, TimeUnit.SECONDS)).isTrue();
    String text = Files.readString(log);
    assertThat(p.exitValue()).as(text).isZero();
    assertThat(text).contains("ranges of output planes in separate tasks");
    assertThat(eventLog(events)).as("the executor was lost while ranges ran").contains("ExecutorLostFailure");
    io.volpool.op.VolumeShape o = new io.volpool.op.VolumeShape(2, 4096, 32, 32);
    VolumesAcrossRowsTest.assertBitIdentical(VolumesAcrossRowsTest.readOutput(out, Map.of("big", o)).get("big"),
        VolumesAcrossRowsTest.readOutput(local, Map.of("big", o)).get("big"), "ranges with one lost executor");
  }

  @Test
  void aGpuRequestOnWorkersWithoutGpusFailsAtOnceAsASettingsError(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("gpu-out");
    int[] code = new int[1];
    long t0 = System.nanoTime();
    String log = submit(tmp.resolve("gpu.log"), code,
        "spark.volpool.input=" + JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"),
        "spark.volpool.output=" + out, "spark.volpool.fused.weights=" + JobEndToEndTest.SEED.model(),
        "spark.volpool.device=gpu", "spark.volpool.output.sharedFilesystem=true",
        "spark.executor.resource.gpu.amount=1", "spark.task.resource.gpu.amount=1",
        "spark.executor.resource.gpu.discoveryScript=" + ROOT.resolve("scripts/get-gpus-resources.sh"),
        "spark.volpool.cluster.resourceTimeout=200");
    double seconds = (System.nanoTime() - t0) / 1e9;
    // no worker has a GPU: deterministic, so exit 2 (the DAG does not retry it) and well before the timeout
    assertThat(code[0]).as(log).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(seconds).as(log).isLessThan(150);
    assertThat(log).contains("no executor can start on spark://127.0.0.1:" + port)
        .contains("spark.executor.resource.gpu.amount=1").contains("127.0.0.1 has 0 gpu(s) of 1");
    assertThat(out).doesNotExist();
    Map<?, ?> status = RunStatus.read(RunStatus.path(new org.apache.hadoop.fs.Path(out.toUri())),
        new org.apache.hadoop.conf.Configuration());
    assertThat(status.get("status")).isEqualTo("failed");
    assertThat(status.get("exit_code")).isEqualTo(2);
  }

  @Test
  void executorsLargerThanEveryWorkerNameEachShortfall(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("big-out");
    int[] code = new int[1];
    String log = submit(tmp.resolve("big.log"), code,
        "spark.volpool.input=" + JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"),
        "spark.volpool.output=" + out, "spark.volpool.fused.weights=" + JobEndToEndTest.SEED.model(),
        "spark.volpool.device=cpu", "spark.volpool.output.sharedFilesystem=true",
        "spark.executor.cores=8", "spark.executor.memory=24g", "spark.volpool.cluster.resourceTimeout=200");
    assertThat(code[0]).as(log).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    // the workers have 1 core and 4 GiB each
    assertThat(log).contains("spark.executor.cores=8").contains("spark.executor.memory=24g")
        .contains("127.0.0.1 has 1 core(s) of 8, 4096 MiB of 24576 MiB");
    assertThat(out).doesNotExist();
  }

  @Test
  void executorsThatDieAsTheyStartAreNamedWithWhereTheirErrorsAre(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("dead-out");
    int[] code = new int[1];
    long t0 = System.nanoTime();
    // a module the executor's Java lacks (as the GPU machine's runtime once lacked jdk.incubator.vector):
    // every executor the workers launch exits at once, unregistered
    String log = submit(tmp.resolve("dead.log"), code,
        "spark.volpool.input=" + JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"),
        "spark.volpool.output=" + out, "spark.volpool.fused.weights=" + JobEndToEndTest.SEED.model(),
        "spark.volpool.device=cpu", "spark.volpool.output.sharedFilesystem=true",
        "spark.executor.extraJavaOptions=--add-modules=jdk.volpool.nosuchmodule", "spark.volpool.cluster.resourceTimeout=120");
    long secs = (System.nanoTime() - t0) / 1_000_000_000L;
    assertThat(code[0]).as(log).isEqualTo(VolpoolMain.EXIT_FAILED);
    assertThat(log).contains("volpool: FAILED: no task could start on spark://127.0.0.1:" + port + ": ")
        .contains("executor(s) ended as they started, none registered (last: Executor app-")
        .contains(" removed: Command exited with code 1").contains("/<executor id>/stderr")
        .doesNotContain("no executor registered at all");
    assertThat(secs).as("fails once a few executors died, not after the 120 s timeout").isLessThan(100);
    // and the error named is really there: the executor's stderr in the worker's work folder
    String appId = log.replaceAll("(?s).*ended as they started.*?(app-[0-9-]+)/<executor id>.*", "$1");
    String stderr;
    try (Stream<Path> s = Files.walk(dir)) {
      Path first = s.filter(p -> p.toString().contains(appId) && p.getFileName().toString().equals("stderr"))
          .findFirst().orElseThrow();
      stderr = Files.readString(first);
    }
    assertThat(stderr).contains("jdk.volpool.nosuchmodule");
    assertThat(out).doesNotExist();
  }

  /** A jar holding only {@link SqlOnTableApp}: the user's application, apart from volpool's jar. */
  static Path appJar(Path tmp) throws IOException {
    Path jar = tmp.resolve("sql-app.jar");
    Path classes = Path.of(SqlOnTableApp.class.getProtectionDomain().getCodeSource().getLocation().getPath());
    try (var out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar))) {
      try (Stream<Path> s = Files.list(classes.resolve("io/volpool/job"))) {
        for (Path c : s.filter(p -> p.getFileName().toString().startsWith("SqlOnTableApp")).toList()) {
          out.putNextEntry(new java.util.jar.JarEntry("io/volpool/job/" + c.getFileName()));
          out.write(Files.readAllBytes(c));
          out.closeEntry();
        }
      }
    }
    return jar;
  }

  // the SQL functions and transform on a Parquet-backed table, in a user's application submitted with --jars
  @Test
  void sqlFunctionsRunOnAFileTableThroughSparkSubmitJars(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), in.toString(), 8, 2);
    Path jar = appJar(tmp);
    for (String master : List.of("local[2]", String.valueOf(port))) {
      int[] code = new int[1];
      String log = run(List.of("bash", ROOT.resolve("scripts/standalone-cluster.sh").toString(), "submit-app",
          dir.toString(), master, SqlOnTableApp.class.getName(), jar.toString(), in.toString(),
          ROOT.resolve("conf/models/fused_seed.safetensors").toString()), tmp.resolve("app-" + code.hashCode() + ".log"),
          300, code);
      assertThat(code[0]).as(master + ": " + log).isZero();
      for (String f : List.of("volpool_avgpool3d", "volpool_avgpool3d_full", "volpool_maxpool3d", "volpool_maxpool3d_full",
          "volpool_fused")) {
        assertThat(log).as(master).contains("SQL-APP " + f + " rows=8 bytes=");
      }
      assertThat(log).as(master).contains("SQL-APP callUDF rows=8").contains("SQL-APP transform rows=8")
          .doesNotContain("NotSerializableException");
    }
  }
}
