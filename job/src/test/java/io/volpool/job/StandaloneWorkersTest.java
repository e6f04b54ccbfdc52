package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StandaloneWorkersTest {
  static final StandaloneWorkers.Ask ASK = new StandaloneWorkers.Ask(8, 24576, Map.of("gpu", 1));

  @Test
  void aRequestNoWorkerHoldsNamesEveryShortfallOfEach() {
    var small = new StandaloneWorkers.Worker("w1", "ALIVE", 4, 8192, Map.of());
    var noGpu = new StandaloneWorkers.Worker("w2", "ALIVE", 16, 65536, Map.of());
    assertThat(StandaloneWorkers.neverFits(ASK, List.of(small, noGpu)))
        .contains("w1 has 4 core(s) of 8, 8192 MiB of 24576 MiB, 0 gpu(s) of 1; w2 has 0 gpu(s) of 1");
  }

  @Test
  void oneWorkerThatHoldsItMeansBusyNotTooSmall() {
    var small = new StandaloneWorkers.Worker("w1", "ALIVE", 4, 8192, Map.of());
    var big = new StandaloneWorkers.Worker("w2", "ALIVE", 8, 24576, Map.of("gpu", 2));
    assertThat(StandaloneWorkers.neverFits(ASK, List.of(small, big))).isEmpty();
  }

  @Test
  void deadWorkersAndNoWorkersAreUnknownNotTooSmall() {
    var dead = new StandaloneWorkers.Worker("w1", "DEAD", 1, 1024, Map.of());
    assertThat(StandaloneWorkers.neverFits(ASK, List.of(dead))).isEmpty();
    assertThat(StandaloneWorkers.neverFits(ASK, List.of())).isEmpty();
    // a dead worker that could hold it does not count either
    var deadBig = new StandaloneWorkers.Worker("w2", "DEAD", 64, 1 << 20, Map.of("gpu", 8));
    var small = new StandaloneWorkers.Worker("w3", "ALIVE", 1, 1024, Map.of("gpu", 1));
    assertThat(StandaloneWorkers.neverFits(ASK, List.of(deadBig, small))).contains("w3 has 1 core(s) of 8, 1024 MiB of 24576 MiB");
  }

  @Test
  void aMasterThatDoesNotAnswerIsUnknownWithinSeconds() {
    long t0 = System.nanoTime();
    assertThat(StandaloneWorkers.within(1, () -> {
      Thread.sleep(60_000);
      return List.of();
    }, "spark://nowhere:7077")).isEmpty();
    assertThat((System.nanoTime() - t0) / 1e9).isLessThan(10);
    assertThat(StandaloneWorkers.within(1, () -> {
      throw new IllegalStateException("refused");
    }, "spark://nowhere:7077")).isEmpty();
    var w = new StandaloneWorkers.Worker("w1", "ALIVE", 4, 8192, Map.of());
    assertThat(StandaloneWorkers.within(5, () -> List.of(w), "spark://m:7077")).contains(List.of(w));
  }
}
