package io.volpool.job;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs the job's main in a JVM of its own, as {@code scripts/volpool} does: for tests that need a
 * given heap, a fresh process, or a process to kill. Uses this test JVM's class path and the same
 * opens Spark needs.
 */
final class ChildJvm {
  private ChildJvm() {}

  /** A started child and where its output goes. */
  record Child(Process process, Path log) {
    String output() throws IOException {
      return Files.readString(log, StandardCharsets.UTF_8);
    }

    /**
     * Waits, while this child runs, until {@code committed} counts at least {@code n} committed tasks (at most 300 s);
     * returns the count then. The kill point of the crash and resume tests.
     */
    int awaitCommits(java.util.concurrent.Callable<Integer> committed, int n) throws Exception {
      long started = System.nanoTime();
      while (committed.call() < n) {
        org.assertj.core.api.Assertions.assertThat(process.isAlive()).as("the run ended before " + n
            + " tasks committed; " + output()).isTrue();
        org.assertj.core.api.Assertions.assertThat(System.nanoTime() - started).as("no kill point within 300 s")
            .isLessThan(300_000_000_000L);
        Thread.sleep(5);
      }
      return committed.call();
    }

    int waitFor(long seconds) throws Exception {
      if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError("child JVM still running after " + seconds + " s; output:\n" + output());
      }
      return process.exitValue();
    }
  }

  static List<String> command(String heap, String mainClass, List<String> args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx" + heap);
    for (String o : System.getProperty("volpool.test.opens", "").split(" ")) {
      if (!o.isBlank()) {
        cmd.add(o);
      }
    }
    cmd.add("-Dvolpool.golden=" + System.getProperty("volpool.golden", ""));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(mainClass);
    cmd.addAll(args);
    return cmd;
  }

  /** Starts {@code VolpoolMain} with {@code --master master} and {@code --conf} entries. */
  static Child start(String heap, String master, Map<String, String> conf, Path log) throws IOException {
    return start(heap, master, conf, log, List.of());
  }

  /** As above, with {@code jvmOptions} (e.g. a test kill point, {@code -Dvolpool.test.killAt=moved_in:TERM}). */
  static Child start(String heap, String master, Map<String, String> conf, Path log, List<String> jvmOptions)
      throws IOException {
    List<String> args = new ArrayList<>(List.of("--master", master, "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.host=127.0.0.1"));
    conf.forEach((k, v) -> {
      args.add("--conf");
      args.add(k + "=" + v);
    });
    List<String> cmd = new ArrayList<>(command(heap, VolpoolMain.class.getName(), args));
    cmd.addAll(1, jvmOptions);
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.redirectErrorStream(true);
    pb.redirectOutput(log.toFile());
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    return new Child(pb.start(), log);
  }

  static String classPathSeparator() {
    return File.pathSeparator;
  }
}
