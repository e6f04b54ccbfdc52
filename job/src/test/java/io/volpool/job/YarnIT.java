package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job on YARN: a MiniYARNCluster (one ResourceManager, one NodeManager) in this JVM, and the
 * spark-submit jar submitted to it by Spark's own SparkSubmit with {@code --master yarn
 * --deploy-mode client} from a JVM of its own, as a user or Airflow does: Spark's jars from the
 * Spark classpath (given to YARN's containers as {@code spark.yarn.jars}), volpool only from the
 * submitted jar, the job on the CPU in an executor container. The exit code and the status file
 * reach the submitter, for a run that succeeds and for one that fails on a bad record in an
 * executor. Runs in mvn verify (failsafe).
 */
class YarnIT {
  static MiniYARNCluster yarn;
  static Path confDir;
  static Path work;

  @BeforeAll
  static void startYarn(@TempDir Path tmp) throws Exception {
    work = tmp;
    YarnConfiguration c = new YarnConfiguration();
    c.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    c.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 4096);
    c.setInt(YarnConfiguration.NM_PMEM_MB, 6144);
    c.setInt(YarnConfiguration.NM_VCORES, 4);
    c.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    c.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    // a build machine's disk may be fuller than YARN's default 90%: the node would be unhealthy and run nothing
    c.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100f);
    // the CapacityScheduler's queues (its capacity-scheduler.xml is not in the shaded minicluster): one queue,
    // whose application masters may take the whole node (the default 10% would not start Spark's)
    c.set("yarn.scheduler.capacity.root.queues", "default");
    c.set("yarn.scheduler.capacity.root.default.capacity", "100");
    c.set("yarn.scheduler.capacity.root.default.maximum-capacity", "100");
    c.set("yarn.scheduler.capacity.maximum-am-resource-percent", "1.0");
    c.set(YarnConfiguration.NM_LOCAL_DIRS, tmp.resolve("nm-local").toString());
    c.set(YarnConfiguration.NM_LOG_DIRS, tmp.resolve("nm-logs").toString());
    yarn = new MiniYARNCluster("volpool-yarn-it", 1, 1, 1);
    yarn.init(c);
    yarn.start();
    // the ResourceManager's address with its real port, for spark-submit's YARN_CONF_DIR
    Configuration got = yarn.getConfig();
    for (int i = 0; i < 200 && got.get(YarnConfiguration.RM_ADDRESS, "").endsWith(":0"); i++) {
      Thread.sleep(50);
    }
    confDir = tmp.resolve("conf");
    Files.createDirectories(confDir);
    try (OutputStream os = Files.newOutputStream(confDir.resolve("yarn-site.xml"))) {
      got.writeXml(os);
    }
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", "file:///");
    try (OutputStream os = Files.newOutputStream(confDir.resolve("core-site.xml"))) {
      core.writeXml(os);
    }
  }

  @AfterAll
  static void stopYarn() {
    if (yarn != null) {
      yarn.stop();
    }
  }

  /** Spark's jars (job/target/lib less volpool and JCuda, which come in the submitted jar) and spark-yarn's. */
  static List<String> sparkJars() throws Exception {
    List<String> jars;
    try (Stream<Path> s = Files.list(Path.of("target/lib"))) {
      jars = s.map(p -> p.toAbsolutePath().toString()).filter(p -> !p.contains("/volpool-") && !p.contains("/jcuda"))
          .sorted().collect(Collectors.toCollection(ArrayList::new));
    }
    Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
        .filter(p -> p.contains("spark-yarn_")).forEach(jars::add);
    assertThat(jars).as("spark-yarn on the test class path").anyMatch(p -> p.contains("spark-yarn_"));
    return jars;
  }

  static Path sparkSubmitJar() throws Exception {
    try (Stream<Path> s = Files.list(Path.of("target"))) {
      return s.filter(p -> p.getFileName().toString().matches("volpool-job-.*-spark\\.jar")).findFirst()
          .orElseThrow(() -> new AssertionError("no target/volpool-job-*-spark.jar: run in mvn verify, after package"))
          .toAbsolutePath();
    }
  }

  record Submitted(int code, String log) {}

  /** spark-submit --master yarn --deploy-mode client of the spark-submit jar with {@code conf}, in a JVM of its own. */
  static Submitted submit(Map<String, String> conf, String name) throws Exception {
    List<String> jars = sparkJars();
    String opens = System.getProperty("volpool.test.opens", "");
    String javaHome = System.getProperty("java.home");
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(javaHome, "bin", "java").toString());
    cmd.add("-Xmx1g");
    cmd.addAll(Arrays.stream(opens.split(" ")).filter(o -> !o.isBlank()).toList());
    cmd.add("-cp");
    // the configuration folder first, as Spark's launcher puts HADOOP_CONF_DIR on the class path
    cmd.add(confDir + File.pathSeparator + String.join(File.pathSeparator, jars));
    cmd.add("org.apache.spark.deploy.SparkSubmit");
    cmd.addAll(List.of("--master", "yarn", "--deploy-mode", "client", "--class", VolpoolMain.class.getName(),
        "--name", "volpool-" + name, "--num-executors", "1", "--executor-cores", "2", "--driver-memory", "1g"));
    if (!conf.containsKey("spark.executor.memory")) {
      cmd.addAll(List.of("--executor-memory", "1g"));
    }
    Map<String, String> all = new java.util.LinkedHashMap<>(Map.of(
        "spark.yarn.jars", jars.stream().map(j -> "local:" + j).collect(Collectors.joining(",")),
        "spark.yarn.stagingDir", work.resolve("staging").toUri().toString(),
        "spark.yarn.am.memory", "512m",
        // YARN's containers start $JAVA_HOME/bin/java: this JVM's, as a cluster's nodes have theirs
        "spark.yarn.appMasterEnv.JAVA_HOME", javaHome,
        "spark.executorEnv.JAVA_HOME", javaHome,
        "spark.yarn.am.extraJavaOptions", opens,
        "spark.executor.extraJavaOptions", opens,
        "spark.driver.host", "127.0.0.1",
        "spark.ui.enabled", "false"));
    all.putAll(conf);
    all.forEach((k, v) -> {
      cmd.add("--conf");
      cmd.add(k + "=" + v);
    });
    cmd.add(sparkSubmitJar().toString());
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().put("HADOOP_CONF_DIR", confDir.toString());
    pb.environment().put("YARN_CONF_DIR", confDir.toString());
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    pb.redirectErrorStream(true);
    Path log = work.resolve(name + ".log");
    pb.redirectOutput(log.toFile());
    Process p = pb.start();
    if (!p.waitFor(420, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("spark-submit still running after 420 s:\n" + Files.readString(log));
    }
    return new Submitted(p.exitValue(), Files.readString(log));
  }

  /** The YARN applications named {@code volpool-NAME}, finished. */
  static List<ApplicationReport> apps(String name) throws Exception {
    try (YarnClient client = YarnClient.createYarnClient()) {
      client.init(yarn.getConfig());
      client.start();
      return client.getApplications().stream().filter(a -> a.getName().equals("volpool-" + name)).toList();
    }
  }

  static Map<String, String> yarnConf(Path input, Path out) {
    Map<String, String> conf = JobEndToEndTest.seedConf(input, "parquet", out);
    conf.put("spark.volpool.device", "cpu");
    // one host: the driver and YARN's container write the same local folder
    conf.put("spark.volpool.output.sharedFilesystem", "true");
    return conf;
  }

  @Test
  void aRunOnYarnSucceedsAndItsExitCodeAndStatusReachTheSubmitter(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out");
    Submitted r = submit(yarnConf(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), out), "ok");
    assertThat(r.code()).as(r.log()).isZero();
    assertThat(r.log()).as("the job ran on YARN").contains("Submitted application application_");
    // in client mode the AM unregisters (with the final status) after the submitter has exited: wait for it
    List<ApplicationReport> apps = apps("ok");
    for (int i = 0; i < 120 && apps.size() == 1 && apps.get(0).getFinalApplicationStatus() == FinalApplicationStatus.UNDEFINED; i++) {
      Thread.sleep(250);
      apps = apps("ok");
    }
    assertThat(apps).hasSize(1);
    assertThat(apps.get(0).getFinalApplicationStatus()).as(apps.get(0).toString()).isEqualTo(FinalApplicationStatus.SUCCEEDED);
    SparkTests.Result local = SparkTests.run(JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir()
        .resolve("volumes_binary.parquet"), "parquet", tmp.resolve("local")));
    assertThat(local.code()).as(local.err()).isZero();
    assertThat(HdfsIT.checksum(out.toString())).isEqualTo(HdfsIT.checksum(tmp.resolve("local").toString())).hasSize(2);
    JsonNode summary = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(summary.get("volumes_out").asLong()).isEqualTo(2);
    assertThat(summary.get("backend").asText()).startsWith("cpu");
    JsonNode status = new ObjectMapper().readTree(tmp.resolve(".out.volpool-status.json").toFile());
    assertThat(status.get("status").asText()).isEqualTo("succeeded");
    assertThat(status.get("exit_code").asInt()).isZero();
    assertThat(status.get("application_id").asText()).isEqualTo(apps.get(0).getApplicationId().toString());
  }

  @Test
  void aBadRecordInAYarnExecutorFailsTheSubmitterWithExitCode3AndAStatusThatSaysWhy(@TempDir Path tmp)
      throws Exception {
    Path in = BadInputTest.parquetWith(tmp, BadInputTest.row("bad-7", List.<Object>of(3, 16, 32, 32), "float32", new byte[100]));
    Path out = tmp.resolve("out");
    Map<String, String> conf = yarnConf(in, out);
    Submitted r = submit(conf, "bad");
    assertThat(r.code()).as(r.log()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.log()).contains("volpool: FAILED: bad record id=bad-7");
    assertThat(Files.exists(out)).as("no output").isFalse();
    JsonNode status = new ObjectMapper().readTree(tmp.resolve(".out.volpool-status.json").toFile());
    assertThat(status.get("status").asText()).isEqualTo("failed");
    assertThat(status.get("exit_code").asInt()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(status.get("message").asText()).contains("bad record id=bad-7");
    assertThat(apps("bad")).hasSize(1);
  }

  @Test
  void anExecutorLargerThanTheClustersLargestContainerIsASettingsError(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out");
    Map<String, String> conf = yarnConf(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), out);
    conf.put("spark.executor.memory", "64g"); // the MiniYARNCluster's largest container is 4 GiB
    Submitted r = submit(conf, "huge");
    // YARN refuses it at the submission, every time: exit 2, not the 1 a scheduler retries
    assertThat(r.code()).as(r.log()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.log()).contains("volpool: FAILED: ").contains("is above the max threshold")
        .contains("spark.executor.memory").doesNotContain("unexpected error");
    assertThat(Files.exists(out)).as("no output").isFalse();
    JsonNode status = new ObjectMapper().readTree(tmp.resolve(".out.volpool-status.json").toFile());
    assertThat(status.get("exit_code").asInt()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
  }
}
