package io.volpool.exec;

import io.volpool.backend.PlaneSink;
import io.volpool.format.Dtype;
import io.volpool.format.Narrow;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.io.VolumeSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayDeque;
import java.util.List;
import java.util.function.LongConsumer;

/**
 * Cuts the output planes of a slabbed volume into output rows of {@code rowPlanes} whole planes (the
 * last may be shorter) as its slabs finish, each a {@link BatchRunner.Finished} of one row with its
 * plane range: the output streams out row by row and is never made whole, whatever its size. Row
 * buffers count against the budget (forced: the rows already being written must not wait for the
 * rows behind them) from when they are filled until the caller is done with them. A row the caller
 * is done with is filled again as the next row of its size (still counted): a range's rows are all of
 * one size but its last, and a fresh heap row each time was 16 MiB zeroed, faulted in and collected
 * (2.0 of 47 task-s of a 32 GiB volume's range tasks on the H100). Driven by one task thread.
 */
final class OutputRows implements PlaneSink {
  private final VolumeSource first;
  private final VolumeShape out;
  private final Dtype dtype;
  private final int rowPlanes;
  private final int ohw;
  private final MemoryBudget budget;
  private final LongConsumer planesDone;
  private final TaskState task;
  /** The output plane after the last one this sink takes: the volume's end, or its range's. */
  private final int end;
  private final ArrayDeque<BatchRunner.Finished> ready = new ArrayDeque<>();
  private ByteBuffer row;
  private int r0;
  private int rn;
  private long done;
  /** The row handed out at the last poll: the caller's until the next. */
  private ByteBuffer handedOut;
  /** Rows the caller is done with (two at most), kept for the next rows of their size. */
  private final ArrayDeque<ByteBuffer> spares = new ArrayDeque<>(2);
  /** Bytes of rows being filled, ready, handed out or spare: what this sink holds of the budget. */
  private long held;

  /**
   * @param first the input row whose pass-through columns every output row carries
   * @param planesDone told the output planes done so far after each slab (progress)
   */
  OutputRows(VolumeSource first, VolumeShape out, Dtype dtype, int rowPlanes, MemoryBudget budget, TaskState task,
      LongConsumer planesDone) {
    this(first, out, dtype, rowPlanes, budget, task, planesDone, out.d());
  }

  /** As above, for output planes up to {@code end} only (a range of the volume): the last row ends there. */
  OutputRows(VolumeSource first, VolumeShape out, Dtype dtype, int rowPlanes, MemoryBudget budget, TaskState task,
      LongConsumer planesDone, int end) {
    this.end = end;
    this.dtype = dtype;
    this.task = task;
    this.first = first;
    this.out = out;
    this.rowPlanes = rowPlanes;
    this.ohw = out.h() * out.w();
    this.budget = budget;
    this.planesDone = planesDone;
  }

  /** Whole output planes per row, at most {@code rowBytes} of data in {@code dtype} (at least one plane). */
  static int rowPlanes(VolumeShape out, Dtype dtype, long rowBytes) {
    long planeBytes = (long) out.c() * out.h() * out.w() * dtype.itemSize();
    return (int) Math.max(1, Math.min(out.d(), rowBytes / planeBytes));
  }

  /**
   * The budget a volume's slabs may take beside its rows: what {@code inputRows} bytes of input rows
   * and three output rows of {@code outRow} (one being written, one ready, one being filled) leave,
   * at least a quarter of the budget and at most one request.
   */
  static long slabShare(MemoryBudget budget, long inputRows, long outRow) {
    return Math.min(budget.maxRequest(), Math.max(budget.limit() / 4, budget.limit() - inputRows - 3 * outRow));
  }

  /** Bytes of one row of {@code rowPlanes} planes in {@code dtype}, its length prefix included. */
  static long rowBytes(VolumeShape out, Dtype dtype, int rowPlanes) {
    return ParquetBatchWriter.GAP + (long) out.c() * rowPlanes * out.h() * out.w() * dtype.itemSize();
  }

  @Override
  public void write(int o0, int o1, FloatBuffer y) {
    done += o1 - o0;
    planesDone.accept(done);
    int d = o0;
    while (d < o1) {
      if (row == null) {
        r0 = d;
        rn = Math.min(rowPlanes, end - d);
        long bytes = rowBytes(out, dtype, rn);
        if (!spares.isEmpty() && spares.peek().capacity() == bytes) {
          row = spares.poll(); // every byte is written again: each channel's planes here, the length prefix by the writer
          row.clear();
        } else {
          while (!spares.isEmpty()) {
            drop(spares.poll());
          }
          budget.forceAcquire(bytes, MemoryBudget.Use.BATCHES);
          held += bytes;
          row = ByteBuffer.allocate((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
        }
      }
      int n = Math.min(o1, r0 + rn) - d;
      for (int c = 0; c < out.c(); c++) {
        // narrowed here when the output dtype is narrow (slab runs hand over float32 planes)
        Narrow.put(y, (c * (o1 - o0) + d - o0) * ohw, row, ParquetBatchWriter.GAP + (c * rn + d - r0) * ohw
            * dtype.itemSize(), n * ohw, dtype);
      }
      d += n;
      if (d == r0 + rn) {
        row.clear();
        ready.add(new BatchRunner.Finished(List.of(first), out, dtype, row, new long[] {ParquetBatchWriter.GAP},
            new int[][] {{r0, r0 + rn}}, task));
        row = null;
      }
    }
  }

  /**
   * The next finished row (valid until the next call), or null when none is ready; the row handed
   * out before becomes a spare (the older of two spares goes back to the budget: rows that do not end
   * with a slab take two in turn).
   */
  BatchRunner.Finished poll() {
    if (handedOut != null) {
      if (spares.size() == 2) {
        drop(spares.poll());
      }
      spares.add(handedOut);
      handedOut = null;
    }
    BatchRunner.Finished f = ready.poll();
    if (f != null) {
      handedOut = f.output();
    }
    return f;
  }

  private void drop(ByteBuffer spare) {
    budget.release(spare.capacity(), MemoryBudget.Use.BATCHES);
    held -= spare.capacity();
  }

  /** Gives every row buffer back to the budget; safe to call twice. */
  void close() {
    budget.release(held, MemoryBudget.Use.BATCHES);
    held = 0;
    ready.clear();
    row = null;
    handedOut = null;
    spares.clear();
  }
}
