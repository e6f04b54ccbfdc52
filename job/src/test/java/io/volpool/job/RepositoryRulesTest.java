package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The repository carries the product: the raw logs that benchmark rows link to stay small (text up to
 * 64 KiB as it is, larger logs gzipped, nothing over 1 MiB, no profiler recordings), so a clone is not
 * mostly old measurements.
 */
class RepositoryRulesTest {
  static final long PLAIN_MAX = 64 << 10;
  static final long ANY_MAX = 1 << 20;

  @Test
  void benchmarkLogsStaySmall() throws Exception {
    Path root = Files.exists(Paths.get("docs")) ? Paths.get(".") : Paths.get("..");
    List<Path> files;
    try (Stream<Path> s = Files.walk(root.resolve("docs/bench-runs"))) {
      files = s.filter(Files::isRegularFile).toList();
    }
    assertThat(files).as("raw benchmark logs").isNotEmpty();
    for (Path f : files) {
      String n = f.getFileName().toString();
      long size = Files.size(f);
      assertThat(n).as(f + ": a profiler recording (summarize it; keep the recording out of git)")
          .doesNotEndWith(".jfr").doesNotEndWith(".nsys-rep").doesNotEndWith(".ncu-rep");
      assertThat(size).as(f + ": over 1 MiB (summarize it and keep its raw form out of git)").isLessThanOrEqualTo(ANY_MAX);
      if (!n.endsWith(".gz") && !n.endsWith(".tgz")) {
        assertThat(size).as(f + ": plain text over 64 KiB (gzip -9 -n it and link the .gz)").isLessThanOrEqualTo(PLAIN_MAX);
      }
    }
  }
}
