package io.volpool.job.commit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The commit's count of output planes per volume written across rows: the rows of every id must
 * hold its output planes {@code [0, D)} exactly once, whichever tasks wrote them, so a range of
 * planes lost with a task, or written by two, fails the run naming the volume and the planes.
 */
class PlaneCoverageTest {
  static long[] row(long d0, long d1, long d) {
    return new long[] {d0, d1, d};
  }

  @Test
  void rowsThatTileEachVolumeOnceInAnyOrderPass() {
    assertThat(CommittedOutput.planeProblem(Map.of("a", List.of(row(64, 128, 150), row(0, 64, 150), row(128, 150, 150)),
        "b", List.of(row(0, 7, 7))))).isNull();
  }

  @Test
  void aMissingRangeIsNamed() {
    assertThat(CommittedOutput.planeProblem(Map.of("a", List.of(row(0, 64, 150), row(128, 150, 150)))))
        .isEqualTo("the committed output of id=a lacks output planes [64, 128) of its 150");
    assertThat(CommittedOutput.planeProblem(Map.of("a", List.of(row(0, 64, 150), row(64, 128, 150)))))
        .isEqualTo("the committed output of id=a lacks output planes [128, 150) of its 150");
    assertThat(CommittedOutput.planeProblem(Map.of("z", List.of(row(64, 150, 150)))))
        .isEqualTo("the committed output of id=z lacks output planes [0, 64) of its 150");
  }

  @Test
  void aRangeWrittenTwiceIsNamed() {
    assertThat(CommittedOutput.planeProblem(Map.of("a", List.of(row(0, 64, 150), row(64, 128, 150), row(64, 128, 150),
        row(128, 150, 150))))).isEqualTo("the committed output of id=a holds output planes [64, 128) twice");
    assertThat(CommittedOutput.planeProblem(Map.of("a", List.of(row(0, 70, 150), row(64, 150, 150)))))
        .isEqualTo("the committed output of id=a holds output planes [64, 70) twice");
  }
}
