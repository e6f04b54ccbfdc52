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
    List<String> cmd = new ArrayList<>(List.of("bash", ROOT.resolve("scripts/standalone-cluster.sh").toString(), "submit",
        dir.toString(), String.valueOf(port)));
    for (String c : conf) {
      cmd.add("--conf");
      cmd.add(c);
    }
    // the reference pool of the default pipeline (avgpool3d has no default kernel)
    SparkTests.REFERENCE_POOL.forEach((k, v) -> {
      cmd.add("--conf");
      cmd.add(k + "=" + v);
    });
    return run(cmd, log, 300, code);
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

  /** The stderr of the executor that {@code worker} ran for the application the submit log names. */
  static String executorLog(Path worker, String submitLog) throws IOException {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("app-[0-9]+-[0-9]+").matcher(submitLog);
    String app = m.find() ? m.group() : "";
    try (Stream<Path> s = Files.walk(worker)) {
      Path p = s.filter(f -> f.toString().contains(app) && f.getFileName().toString().equals("stderr")).findFirst()
          .orElseThrow(() -> new AssertionError("no executor stderr of " + app + " under " + worker));
      return Files.readString(p);
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
    // CPU fallback of device=auto, chosen once, before the first task
    for (String w : List.of("worker0", "worker1")) {
      String stderr = executorLog(dir.resolve(w), log);
      assertThat(stderr).as(w).contains("volpool warm-up done in").contains("nothing to warm on cpu");
      assertThat(stderr.indexOf("volpool warm-up done")).as(w + ": the warm-up before the first task")
          .isLessThan(stderr.indexOf("Running task"));
    }
    assertThat(CrashTest.parquetChecksum(out)).isEqualTo(CrashTest.parquetChecksum(local));
  }

  @Test
  void aGpuRequestOnWorkersWithoutGpusFailsClearly(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("gpu-out");
    int[] code = new int[1];
    String log = submit(tmp.resolve("gpu.log"), code,
        "spark.volpool.input=" + JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"),
        "spark.volpool.output=" + out, "spark.volpool.fused.weights=" + JobEndToEndTest.SEED.model(),
        "spark.volpool.device=gpu", "spark.volpool.output.sharedFilesystem=true",
        "spark.executor.resource.gpu.amount=1", "spark.task.resource.gpu.amount=1",
        "spark.executor.resource.gpu.discoveryScript=" + ROOT.resolve("scripts/get-gpus-resources.sh"),
        "spark.volpool.cluster.resourceTimeout=20");
    assertThat(code[0]).as(log).isEqualTo(VolpoolMain.EXIT_FAILED);
    assertThat(log).contains("no task could start on spark://127.0.0.1:" + port + " within 20 s")
        .contains("spark.executor.resource.gpu.amount=1");
    assertThat(out).doesNotExist();
    Map<?, ?> status = RunStatus.read(RunStatus.path(new org.apache.hadoop.fs.Path(out.toUri())),
        new org.apache.hadoop.conf.Configuration());
    assertThat(status.get("status")).isEqualTo("failed");
    assertThat(status.get("exit_code")).isEqualTo(1);
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
}
