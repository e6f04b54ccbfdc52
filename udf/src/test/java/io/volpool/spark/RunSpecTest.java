package io.volpool.spark;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** How an executor sizes the CPU backend's pool when spark.volpool.cpu.threads is 0. */
class RunSpecTest {
  @Test
  void theSettingWinsThenTheExecutorsCoresThenTheJvmsCores() {
    SparkConf four = new SparkConf(false).set("spark.executor.cores", "4");
    assertThat(RunSpec.executorThreads(6, four, 64)).isEqualTo(6);
    // two executors of 4 cores on a 64-core host: 4 threads each, not 64
    assertThat(RunSpec.executorThreads(0, four, 64)).isEqualTo(4);
    assertThat(RunSpec.executorThreads(0, new SparkConf(false), 12)).isEqualTo(12);
    assertThat(RunSpec.executorThreads(0, null, 12)).isEqualTo(12);
    assertThat(RunSpec.executorThreads(0, null, 0)).isEqualTo(1);
  }
}
