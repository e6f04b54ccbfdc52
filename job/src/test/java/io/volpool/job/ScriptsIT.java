package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * scripts/volpool as a user and a scheduler run it (after the jars are built, so in failsafe): it takes
 * spark-submit's conventions (Spark's defaults file, the driver's memory) and it is the JVM, so a
 * kill of its pid stops the job.
 */
class ScriptsIT {
  static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  record Run(int code, String out) {}

  static Run volpool(Path tmp, Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("bash", ROOT.resolve("scripts/volpool").toString()));
    cmd.addAll(List.of(args));
    Path log = Files.createTempFile(tmp, "volpool", ".log");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("VOLPOOL_CLASS_ARCHIVE", "off");
    pb.environment().put("VOLPOOL_JAVA_OPTS", "-Xmx1g");
    pb.environment().remove("SPARK_CONF_DIR");
    pb.environment().remove("SPARK_HOME");
    pb.environment().putAll(env);
    Process p = pb.start();
    assertThat(p.waitFor(180, TimeUnit.SECONDS)).isTrue();
    return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
  }

  static String[] identity(Path in, Path out, String... more) {
    List<String> a = new ArrayList<>(List.of("--master", "local[1]", "--conf", "spark.volpool.input=" + in, "--conf",
        "spark.volpool.output=" + out, "--conf", "spark.volpool.pipeline=identity", "--conf", "spark.volpool.device=cpu",
        "--conf", "spark.ui.enabled=false"));
    a.addAll(List.of(more));
    return a.toArray(new String[0]);
  }

  @Test
  void sparkDefaultsAndDriverMemoryAreTakenAsSparkSubmitTakesThem(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    HardeningTest.volumes("a", "b").coalesce(1).write().parquet(in.toString());
    Path confDir = Files.createDirectories(tmp.resolve("spark-conf"));
    Files.writeString(confDir.resolve("spark-defaults.conf"), "spark.volpool.batch.size 0\nspark.volpool.cpu.threads=40000\n");
    Run r = volpool(tmp, Map.of("SPARK_CONF_DIR", confDir.toString()), identity(in, tmp.resolve("o1")));
    assertThat(r.code()).as(r.out()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.out()).contains("read Spark's defaults from " + confDir.resolve("spark-defaults.conf"))
        .contains("spark.volpool.cpu.threads must be at most 4096, got 40000");
    // --conf wins over the defaults file
    r = volpool(tmp, Map.of("SPARK_CONF_DIR", confDir.toString()), identity(in, tmp.resolve("o2"), "--conf",
        "spark.volpool.cpu.threads=1"));
    assertThat(r.code()).as(r.out()).isZero();
    // the driver's memory: given on the command line it sizes the JVM; from a file it cannot, and says how to
    Path props = tmp.resolve("p.properties");
    Files.writeString(props, "spark.driver.memory=3g\n");
    r = volpool(tmp, Map.of(), identity(in, tmp.resolve("o3"), "--properties-file", props.toString()));
    assertThat(r.code()).as(r.out()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.out()).contains("spark.driver.memory=3g cannot apply: this JVM started with a")
        .contains("--driver-memory 3g");
    r = volpool(tmp, Map.of(), identity(in, tmp.resolve("o4"), "--properties-file", props.toString(), "--driver-memory",
        "3g"));
    assertThat(r.code()).as(r.out()).isZero();
    r = volpool(tmp, Map.of(), identity(in, tmp.resolve("o5"), "--conf", "spark.driver.memory=768m"));
    assertThat(r.code()).as(r.out()).isZero();
  }

  @Test
  void killingTheScriptsPidStopsTheJob(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("many");
    SampleData.write(SparkTests.spark(), in.toString(), 4096, 16);
    Path out = tmp.resolve("out");
    List<String> cmd = new ArrayList<>(List.of("bash", ROOT.resolve("scripts/volpool").toString()));
    cmd.addAll(List.of(identity(in, out, "--conf", "spark.volpool.pipeline=avgpool3d", "--conf",
        "spark.volpool.avgpool3d.kernelSize=3")));
    Path log = tmp.resolve("kill.log");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("VOLPOOL_CLASS_ARCHIVE", "off");
    pb.environment().put("VOLPOOL_JAVA_OPTS", "-Xmx1g");
    Process p = pb.start();
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (p.isAlive() && !Files.readString(log).contains("volpool progress:") && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertThat(Files.readString(log)).contains("volpool progress:");
    assertThat(p.info().command().orElse("")).as("the script's pid is the JVM").endsWith("java");
    new ProcessBuilder("kill", "-9", String.valueOf(p.pid())).start().waitFor();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    Thread.sleep(2000);
    assertThat(ProcessHandle.allProcesses().filter(h -> h.info().commandLine().orElse("").contains(out.toString())))
        .as("no JVM left running the job").isEmpty();
    assertThat(out).doesNotExist();
  }
}
