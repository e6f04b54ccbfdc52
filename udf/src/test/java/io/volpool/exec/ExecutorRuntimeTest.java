package io.volpool.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.conf.Device;
import io.volpool.conf.ExecutorSettings;
import io.volpool.memory.MemoryBudgetException;
import org.junit.jupiter.api.Test;

class ExecutorRuntimeTest {
  static ExecutorSettings cpu(long budget) {
    return new ExecutorSettings(Device.CPU, 0, 1, 0.5, budget, 0, 1 << 16);
  }

  /** How an executor sizes the CPU backend's pool when spark.volpool.cpu.threads is 0. */
  @Test
  void theSettingWinsThenTheExecutorsCoresThenTheJvmsCores() {
    assertThat(ExecutorRuntime.threads(6, 4, 64)).isEqualTo(6);
    // two executors of 4 cores on a 64-core host: 4 threads each, not 64
    assertThat(ExecutorRuntime.threads(0, 4, 64)).isEqualTo(4);
    assertThat(ExecutorRuntime.threads(0, -1, 12)).isEqualTo(12);
    assertThat(ExecutorRuntime.threads(0, -1, 0)).isEqualTo(1);
  }

  @Test
  void oneLookupGivesEveryCallerTheSameBudgetAndBackendUntilTheExecutorStops() {
    ExecutorRuntime a = ExecutorRuntime.of(cpu(64L << 20));
    ExecutorRuntime b = ExecutorRuntime.of(cpu(64L << 20));
    assertThat(b.budget()).isSameAs(a.budget());
    assertThat(b.backend()).isSameAs(a.backend());
    assertThat(a.budget().limit()).isEqualTo(64L << 20);
    ExecutorRuntime.shutdown();
    assertThat(ExecutorRuntime.of(cpu(64L << 20)).backend()).as("made anew after the shutdown").isNotSameAs(a.backend());
  }

  @Test
  void aBudgetTheHeapCannotHoldIsRefusedNamingTheSetting() {
    long more = Runtime.getRuntime().maxMemory() + (1L << 30);
    assertThatThrownBy(() -> ExecutorRuntime.of(cpu(more))).isInstanceOf(MemoryBudgetException.class)
        .hasMessageContaining("spark.volpool.memory.budget");
  }
}
