package io.volpool.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The pinned pool's arithmetic: aligned first-fit blocks that never overlap, merged again when freed. */
class ArenaTest {
  @Test
  void blocksAreAlignedFirstFitAndNeverOverlap() {
    Arena a = new Arena(10 * 4096 + 100, 4096);
    assertThat(a.size()).as("rounded down to the alignment").isEqualTo(10 * 4096);
    long x = a.take(1);
    long y = a.take(4097);
    long z = a.take(4096);
    assertThat(new long[] {x, y, z}).containsExactly(0, 4096, 3 * 4096);
    assertThat(a.used()).isEqualTo(4 * 4096);
    assertThat(a.take(7 * 4096)).as("only six pages are left").isEqualTo(-1);
    a.give(y);
    assertThat(a.take(4096)).as("first fit reuses the freed range").isEqualTo(4096);
  }

  @Test
  void freedNeighboursMergeSoTheWholeRegionCanBeTakenAgain() {
    Arena a = new Arena(8 << 20, 4096);
    List<Long> blocks = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      blocks.add(a.take(1 << 20));
    }
    assertThat(a.take(1)).isEqualTo(-1);
    // free in an order that needs merging on both sides
    for (int i : new int[] {1, 3, 2, 0, 7, 5, 6, 4}) {
      a.give(blocks.get(i));
    }
    assertThat(a.used()).isZero();
    assertThat(a.largestFree()).isEqualTo(8 << 20);
    assertThat(a.take(8 << 20)).isZero();
  }

  @Test
  void randomTakesAndGivesKeepBlocksDisjointAndInside() {
    SplittableRandom r = new SplittableRandom(7);
    Arena a = new Arena(64 << 20, 4096);
    List<long[]> live = new ArrayList<>();
    for (int step = 0; step < 20_000; step++) {
      if (!live.isEmpty() && r.nextInt(3) == 0) {
        long[] b = live.remove(r.nextInt(live.size()));
        a.give(b[0]);
      } else {
        long len = 1 + r.nextInt(6 << 20);
        long at = a.take(len);
        if (at >= 0) {
          assertThat(at % 4096).isZero();
          assertThat(at + len).isLessThanOrEqualTo(a.size());
          for (long[] o : live) {
            assertThat(at + len <= o[0] || o[0] + o[1] <= at).as("block [%d, %d) overlaps [%d, %d)", at, at + len, o[0],
                o[0] + o[1]).isTrue();
          }
          live.add(new long[] {at, len});
        }
      }
    }
    for (long[] b : live) {
      a.give(b[0]);
    }
    assertThat(a.largestFree()).as("everything merged back").isEqualTo(a.size());
  }

  @Test
  void givingBackWhatWasNotTakenIsRefused() {
    Arena a = new Arena(1 << 20, 4096);
    long x = a.take(10);
    a.give(x);
    assertThatThrownBy(() -> a.give(x)).isInstanceOf(IllegalStateException.class).hasMessageContaining("offset 0");
  }
}
