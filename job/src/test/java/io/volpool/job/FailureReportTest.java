package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.DeviceUnavailableException;
import io.volpool.conf.ExitCode;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolFailure;
import io.volpool.io.BadRecordException;
import io.volpool.io.CorruptInputException;
import io.volpool.job.io.NoInputException;
import io.volpool.memory.MemoryBudgetException;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.spark.SparkException;
import org.junit.jupiter.api.Test;

/** The driver's report is a lookup: each failure kind says its exit code and its advice, wherever Spark wraps it. */
class FailureReportTest {
  static String report(Throwable t, int[] code) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    code[0] = VolpoolMain.report(t, new PrintStream(b, true, StandardCharsets.UTF_8));
    return b.toString(StandardCharsets.UTF_8);
  }

  static List<RuntimeException> failures() {
    return List.of(new SettingsException("spark.volpool.batch.size must be at least 0, got -1"),
        new MemoryBudgetException("a batch of 2 GiB is more than the budget of 1 GiB can grant", 2, 1),
        new NoInputException("/data/in", "Parquet", List.of()),
        new DeviceUnavailableException("the NVIDIA driver library libcuda.so.1 is not installed", null),
        new BadRecordException("id=v7", "data holds 100 bytes"),
        new CorruptInputException("/data/in/a.parquet: column data ends early"),
        new ResourceWatch.ClusterResourceException("no executor can start on spark://m:7077", true));
  }

  @Test
  void everyKindEndsWithItsOwnCodeAndAdviceWhereverItIsWrapped() {
    for (RuntimeException e : failures()) {
      VolpoolFailure f = (VolpoolFailure) e;
      assertThat(f.exit()).as(e.toString()).isNotEqualTo(ExitCode.FAILED);
      // as the driver gets it from a task: a SparkException around Spark's own wrapper around it
      Throwable wrapped = new SparkException("Job aborted due to stage failure: ...",
          new RuntimeException("Task failed while writing rows", e));
      int[] code = new int[1];
      String out = report(wrapped, code);
      assertThat(code[0]).as(out).isEqualTo(f.exit().code());
      assertThat(out).startsWith("volpool: FAILED: " + f.line() + "\n").contains("volpool: " + f.advice())
          .doesNotContain("\tat ");
    }
  }

  @Test
  void aCommitFailureIsExitOneWithItsLineAndAdviceAndNoStackTrace() {
    for (io.volpool.job.commit.CommitFailure e : List.of(
        new io.volpool.job.commit.ConcurrentCommitException("another run is committing to /data/out right now"),
        new io.volpool.job.commit.OutputMismatchException("output check failed: 4 volumes read, 3 committed"))) {
      int[] code = new int[1];
      String out = report(new RuntimeException("wrapped", e), code);
      assertThat(code[0]).as(out).isEqualTo(1);
      assertThat(out).startsWith("volpool: FAILED: " + e.getMessage() + "\n").contains("volpool: " + e.advice())
          .doesNotContain("\tat ").doesNotContain("unexpected");
    }
  }

  @Test
  void theFirstInTheChainDecidesAndRetryableOnesFallThrough() {
    int[] code = new int[1];
    String out = report(new BadRecordException("id=a", "broken", new SettingsException("inner")), code);
    assertThat(code[0]).isEqualTo(3);
    assertThat(out).contains("bad record id=a: broken").doesNotContain("inner");
    // a cluster that is only busy: exit 1, its own line
    out = report(new SparkException("x", new ResourceWatch.ClusterResourceException("no task could start on spark://m", false)), code);
    assertThat(code[0]).isEqualTo(1);
    assertThat(out).startsWith("volpool: FAILED: no task could start on spark://m");
    // only the text of a task's failure survived (its class not loadable on the driver)
    out = report(new SparkException("Lost task 0.0: " + DeviceUnavailableException.PREFIX + "no driver. Set ..."), code);
    assertThat(code[0]).isEqualTo(4);
    out = report(new SparkException("Lost task 0.0: io.volpool.io.BadRecordException: bad record id=z: too short"), code);
    assertThat(code[0]).isEqualTo(3);
    assertThat(out).contains("volpool: FAILED: bad record id=z: too short");
  }
}
