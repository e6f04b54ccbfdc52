package io.volpool.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * The benchmarks and their anchors are the lab, not the product: the jars users run (volpool-udf's,
 * the job's, the spark-submit jar) hold none of their classes. This module builds after them, so
 * their jars are there to read.
 */
class ShippedJarsTest {
  static List<Path> shipped() throws Exception {
    List<Path> jars = new ArrayList<>();
    for (String dir : List.of("../udf/target", "../job/target")) {
      try (var s = Files.list(Path.of(dir))) {
        s.filter(p -> p.getFileName().toString().matches("volpool-(udf|job)-.*\\.jar")
            && !p.getFileName().toString().endsWith("-tests.jar")).forEach(jars::add);
      }
    }
    return jars;
  }

  @Test
  void noShippedJarHoldsABenchmarkOrAnAnchor() throws Exception {
    List<Path> jars = shipped();
    assertThat(jars).as("udf's jar, the job's and the spark-submit jar").hasSizeGreaterThanOrEqualTo(3);
    List<String> found = new ArrayList<>();
    for (Path jar : jars) {
      try (JarFile f = new JarFile(jar.toFile())) {
        f.stream().map(e -> e.getName())
            .filter(n -> n.startsWith("io/volpool/bench/") || n.equals("SparkCeiling.class") || n.equals("PinnedRead.class")
                || n.equals("PageRead.class"))
            .forEach(n -> found.add(jar.getFileName() + "!" + n));
      }
    }
    assertThat(found).as("benchmark classes in shipped jars").isEmpty();
  }

  @Test
  void thisModuleBuildsTheBenchmarksAndTheAnchors() throws Exception {
    for (String c : List.of("io.volpool.bench.GpuBench", "io.volpool.bench.CpuBench", "io.volpool.bench.WriteLimits",
        "SparkCeiling", "PinnedRead", "PageRead")) {
      assertThat(Class.forName(c)).as(c).isNotNull();
    }
    assertThat(Path.of("anchors/torch_anchors.py")).exists();
    assertThat(Path.of("anchors/large_volume_anchor.py")).exists();
  }
}
