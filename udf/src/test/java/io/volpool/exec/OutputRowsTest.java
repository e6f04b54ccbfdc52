package io.volpool.exec;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.VolumeSink;
import io.volpool.format.Dtype;
import io.volpool.io.VolumeSource;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The output rows of a slabbed volume: every value in its row and place, rows reused, the budget given back. */
class OutputRowsTest {
  private static final VolumeShape OUT = new VolumeShape(2, 11, 2, 3);

  private static final VolumeSource FIRST = new VolumeSource() {
    @Override
    public String record() {
      return "v0";
    }

    @Override
    public VolumeShape shape() {
      return OUT;
    }

    @Override
    public void copyTo(VolumeSink dst) {
      throw new UnsupportedOperationException();
    }
  };

  /** Bytes of an output row of 3 planes. */
  private static final long ROW3 = OutputRows.rowBytes(OUT, Dtype.FLOAT32, 3);

  /** A sink of float32 rows of {@code rowPlanes} planes of {@link #OUT} on {@code budget}, as one task has it. */
  private static OutputRows sink(MemoryBudget budget, int rowPlanes) {
    return new OutputRows(FIRST, OUT, Dtype.FLOAT32, rowPlanes, budget, null, done -> { });
  }

  /** The value of channel c, plane d, element i of the plane. */
  private static float value(int c, int d, int i) {
    return c * 1000 + d * 10 + i;
  }

  /** Slab output planes [o0, o1) as a slab run hands them over: channel-major, then plane. */
  private static FloatBuffer slab(int o0, int o1) {
    int hw = OUT.h() * OUT.w();
    FloatBuffer y = FloatBuffer.allocate(OUT.c() * (o1 - o0) * hw);
    for (int c = 0; c < OUT.c(); c++) {
      for (int d = o0; d < o1; d++) {
        for (int i = 0; i < hw; i++) {
          y.put(value(c, d, i));
        }
      }
    }
    return y.flip();
  }

  @Test
  void everyRowHoldsItsPlanesAndARowTheCallerIsDoneWithIsFilledAgain() {
    MemoryBudget budget = new MemoryBudget(1L << 30);
    int rowPlanes = 3;
    long rowBytes = OutputRows.rowBytes(OUT, Dtype.FLOAT32, rowPlanes);
    OutputRows rows = sink(budget, rowPlanes);
    int hw = OUT.h() * OUT.w();
    List<int[]> seen = new ArrayList<>();
    Map<ByteBuffer, Integer> buffers = new IdentityHashMap<>();
    long most = 0;
    // slabs of 2 planes against rows of 3: rows cut across slabs, the last row (2 planes) shorter
    for (int o0 = 0; o0 < OUT.d(); o0 += 2) {
      int o1 = Math.min(OUT.d(), o0 + 2);
      rows.write(o0, o1, slab(o0, o1));
      most = Math.max(most, budget.used());
      for (BatchRunner.Finished f = rows.poll(); f != null; f = rows.poll()) {
        int[] p = f.planes()[0];
        seen.add(p);
        buffers.merge(f.output(), 1, Integer::sum);
        ByteBuffer b = f.output().duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int n = p[1] - p[0];
        assertThat(b.capacity()).isEqualTo(ParquetBatchWriter.GAP + OUT.c() * n * hw * Float.BYTES);
        for (int c = 0; c < OUT.c(); c++) {
          for (int d = p[0]; d < p[1]; d++) {
            for (int i = 0; i < hw; i++) {
              int at = ParquetBatchWriter.GAP + ((c * n + d - p[0]) * hw + i) * Float.BYTES;
              assertThat(b.getFloat(at)).as("channel %d plane %d element %d", c, d, i).isEqualTo(value(c, d, i));
            }
          }
        }
        // what a writer does with the prefix, and a caller's scribbles: the next row must not see them
        b.putInt(0, -1);
        for (int at = ParquetBatchWriter.GAP; at < b.capacity(); at += Float.BYTES) {
          b.putFloat(at, Float.NaN);
        }
      }
    }
    assertThat(seen).containsExactly(new int[] {0, 3}, new int[] {3, 6}, new int[] {6, 9}, new int[] {9, 11});
    // the three full rows were two buffers taken in turn (one filled while the caller held the other), not three
    assertThat(buffers.values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(4);
    assertThat(buffers).hasSize(3);
    assertThat(most).isLessThanOrEqualTo(3 * rowBytes);
    rows.close();
    rows.close();
    // the rows went back to the budget's pool, still counted: the next task's rows are these
    long shorter = OutputRows.rowBytes(OUT, Dtype.FLOAT32, 2);
    assertThat(budget.used()).isEqualTo(2 * rowBytes + shorter);
    OutputRows next = sink(budget, rowPlanes);
    next.write(0, 3, slab(0, 3));
    BatchRunner.Finished f = next.poll();
    assertThat(buffers).containsKey(f.output());
    assertThat(f.output().getFloat(ParquetBatchWriter.GAP + 4)).isEqualTo(value(0, 0, 1));
    next.close();
    budget.heapBuffers().evictIdle();
    assertThat(budget.used()).isZero();
  }

  @Test
  void closingMidVolumeGivesBackTheReadyRowAndTheOneBeingFilled() {
    MemoryBudget budget = new MemoryBudget(1L << 30);
    OutputRows rows = sink(budget, 3);
    rows.write(0, 5, slab(0, 5)); // row [0, 3) ready, never polled; row [3, 6) being filled (a task failing here)
    assertThat(budget.used()).isEqualTo(2 * ROW3);
    rows.close();
    rows.close();
    budget.heapBuffers().evictIdle();
    assertThat(budget.used()).isZero();
  }

  @Test
  void aRowWithNoRoomDropsNoOtherIdleBuffer() {
    MemoryBudget budget = new MemoryBudget(4 * ROW3);
    // an idle buffer of another size in the pool (another task's row), and another task holding the rest
    ByteBuffer other = budget.heapBuffers().takeIfRoom(2 * ROW3);
    budget.heapBuffers().give(2 * ROW3, other);
    budget.forceAcquire(ROW3 + 1, MemoryBudget.Use.BATCHES);
    OutputRows rows = sink(budget, 3);
    rows.write(0, 3, slab(0, 3));
    assertThat(rows.poll().output().getFloat(ParquetBatchWriter.GAP)).isEqualTo(value(0, 0, 0));
    rows.close();
    // the row was forced beside the pool, and the other buffer is still there, idle
    assertThat(budget.heapBuffers().takeIfRoom(2 * ROW3)).isSameAs(other);
  }

  @Test
  void aRowLargerThanOneRequestIsForcedAndReleased() {
    MemoryBudget budget = new MemoryBudget(ROW3); // one request: half of it
    OutputRows rows = sink(budget, 3);
    rows.write(0, 3, slab(0, 3));
    BatchRunner.Finished f = rows.poll();
    assertThat(f.output().getFloat(ParquetBatchWriter.GAP + 8)).isEqualTo(value(0, 0, 2));
    assertThat(budget.used()).isEqualTo(ROW3);
    rows.poll();
    assertThat(budget.used()).isZero();
    rows.close();
    assertThat(budget.used()).isZero();
  }

  @Test
  void aRowTheBudgetHasNoRoomForIsAllocatedBesideThePoolAndReleased() {
    // room for one row of the pool beside another task's byte; the second row is forced beyond the limit, as rows
    // always were
    MemoryBudget budget = new MemoryBudget(2 * ROW3);
    budget.forceAcquire(1, MemoryBudget.Use.BATCHES);
    OutputRows rows = sink(budget, 3);
    rows.write(0, 4, slab(0, 4)); // fills row [0, 3) and starts [3, 6)
    assertThat(budget.used()).isEqualTo(1 + 2 * ROW3);
    BatchRunner.Finished first = rows.poll();
    assertThat(first.planes()[0]).containsExactly(0, 3);
    rows.write(4, 6, slab(4, 6));
    BatchRunner.Finished second = rows.poll();
    assertThat(second.output().getFloat(ParquetBatchWriter.GAP)).isEqualTo(value(0, 3, 0));
    rows.poll();
    rows.close();
    // the pooled row idles, counted; the forced one is gone from the budget
    assertThat(budget.used()).isEqualTo(1 + ROW3);
    budget.heapBuffers().evictIdle();
    budget.release(1, MemoryBudget.Use.BATCHES);
    assertThat(budget.used()).isZero();
  }
}
