package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Runs airflow/tests/test_volpool_dag.py (the DAG against stubs of Airflow and of the Spark
 * provider's operator signature: Airflow itself cannot be installed here). Skips, saying why, only
 * when there is no python3.
 */
class AirflowDagTest {
  @Test
  void dagTestsPass() throws Exception {
    Path script = Path.of("..", "airflow", "tests", "test_volpool_dag.py").toAbsolutePath().normalize();
    Process p;
    try {
      p = new ProcessBuilder("python3", script.toString()).redirectErrorStream(true).start();
    } catch (java.io.IOException e) {
      Assumptions.abort("python3 is not installed, so the Airflow DAG's tests cannot run: " + e.getMessage());
      return;
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).contains("Ran 12 tests").contains("OK");
  }
}
