package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.format.NpyArray;
import io.volpool.testing.Golden;
import io.volpool.testing.Tolerance;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The acceptance check, for every golden case: the job's main, with input.format=npy on a
 * folder holding only the case's input.npy and the case's parameters and model, writes an
 * input.npy that matches expected.npy.
 */
class GoldenJobTest {
  static Stream<Golden.Case> cases() {
    return Golden.cases().stream();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void jobReproducesGoldenCase(Golden.Case c, @TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Files.createDirectories(in);
    Files.copy(c.dir().resolve("input.npy"), in.resolve("input.npy"));
    Path out = tmp.resolve("out");
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "input.format", "npy", "output", out.toString());
    conf.putAll(SparkTests.caseSettings(c));
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as("exit code; stderr: " + r.err()).isZero();
    NpyArray got = SparkTests.readNpy(out.resolve("input.npy"));
    NpyArray exp = c.expected();
    assertThat(got.shape()).as("output shape").containsExactly(exp.shape());
    Tolerance.assertClose(got.toFloatArray(), exp.toFloatArray(), c + " through the job");
    assertThat(r.out()).contains("volumes       " + c.batch() + " in, " + c.batch() + " out");
  }
}
