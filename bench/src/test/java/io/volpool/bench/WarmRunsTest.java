package io.volpool.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.job.SampleData;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The warm-JVM benchmark driver runs the real job again and again, each run's summary kept, the output gone after. */
class WarmRunsTest {
  @TempDir
  Path dir;

  @Test
  void runsTheJobEachTimeAndKeepsEverySummary() throws Exception {
    Path in = dir.resolve("in");
    SparkSession spark = SparkSession.builder().master("local[2]").appName("warm-runs-test")
        .config("spark.ui.enabled", "false").getOrCreate();
    try {
      SampleData.write(spark, in.toString(), 8, 2);
    } finally {
      spark.stop();
    }
    Path out = dir.resolve("out");
    int code = WarmRuns.run(new String[] {"3", dir.resolve("summaries").toString(), "--master", "local[2]",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.volpool.input=" + in, "--conf",
        "spark.volpool.output=" + out, "--conf", "spark.volpool.pipeline=avgpool3d", "--conf",
        "spark.volpool.avgpool3d.kernelSize=2", "--conf", "spark.volpool.device=cpu"});
    assertThat(code).isZero();
    Instant before = Instant.EPOCH;
    for (int i = 1; i <= 3; i++) {
      Path summary = dir.resolve("summaries/run-" + i + ".json");
      assertThat(summary).exists();
      JsonNode d = new ObjectMapper().readTree(summary.toFile());
      assertThat(d.get("status").asText()).isEqualTo("succeeded");
      assertThat(d.get("volumes_out").asLong()).isEqualTo(8);
      Instant written = Files.getLastModifiedTime(summary).toInstant();
      assertThat(written).as("run %d's summary is its own run's, written after the run before's", i).isAfter(before);
      before = written;
    }
    assertThat(dir.resolve("summaries/run-4.json")).doesNotExist();
    assertThat(out).as("the output is deleted after the last run").doesNotExist();
  }

  @Test
  void refusesARunCountThatIsNoPositiveNumber() {
    for (String runs : new String[] {"x", "0", "-1", ""}) {
      assertThatThrownBy(() -> WarmRuns.check(new String[] {runs, "s", "--conf", "spark.volpool.output=/tmp/o"}))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("RUNS");
    }
  }

  @Test
  void needsTheOutputAmongTheJobsArguments() {
    assertThatThrownBy(() -> WarmRuns.output(new String[] {"--conf", "spark.volpool.input=x"}))
        .hasMessageContaining("spark.volpool.output=PATH");
    assertThat(WarmRuns.output(new String[] {"--conf", "spark.volpool.output=file:/tmp/a", "--conf",
        "spark.volpool.output=/tmp/b"})).isEqualTo(Path.of("/tmp/b"));
  }
}
