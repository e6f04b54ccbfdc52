package io.volpool.exec;

import io.volpool.backend.PlaneSink;
import io.volpool.format.Dtype;
import io.volpool.format.Narrow;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.io.VolumeSource;
import io.volpool.memory.BufferPool;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.function.LongConsumer;

/**
 * Cuts the output planes of a slabbed volume into output rows of {@code rowPlanes} whole planes (the
 * last may be shorter) as its slabs finish, each a {@link BatchRunner.Finished} of one row with its
 * plane range: the output streams out row by row and is never made whole, whatever its size. Row
 * buffers count against the budget, and never wait for it (the rows already being written must not wait
 * for the rows behind them), from when they are filled until the caller is done with them. Rows come from the
 * budget's pool of heap buffers ({@link MemoryBudget#heapBuffers}) and go back to it once the caller is
 * done, so the next row of their size, in this task or another, fills them again: a range task's one
 * output row of 64 MiB, fresh each time, was zeroed, faulted in and collected for every task (3.4 of
 * 45 busy task-s of a 32 GiB volume's 64 range tasks on the H100). A row the pool cannot give at once
 * (no idle one, and no room without dropping other buffers) is allocated beside it, forced, and dropped
 * after. Driven by one task thread.
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
  private final BufferPool<Long, ByteBuffer> pool;
  /** Rows allocated beside the pool (forced on the budget when it had no room), released when given back. */
  private final Set<ByteBuffer> forced = Collections.newSetFromMap(new IdentityHashMap<>());

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
    this.pool = budget.heapBuffers();
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
        row = take(rowBytes(out, dtype, rn));
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
   * out before goes back.
   */
  BatchRunner.Finished poll() {
    if (handedOut != null) {
      giveBack(handedOut);
      handedOut = null;
    }
    BatchRunner.Finished f = ready.poll();
    if (f != null) {
      handedOut = f.output();
    }
    return f;
  }

  /**
   * A row of {@code bytes}: an idle one of the pool, a new one of the pool when the budget has room as it
   * stands (no other pool's idle buffers dropped for it: rows were forced before they were pooled), else one
   * beside it, forced. Every byte of it is written again: each channel's planes here, the length prefix by
   * the writer.
   */
  private ByteBuffer take(long bytes) {
    ByteBuffer b = pool.takeIfRoom(bytes);
    if (b == null) {
      budget.forceAcquire(bytes, MemoryBudget.Use.BATCHES);
      try {
        b = ByteBuffer.allocate(Math.toIntExact(bytes)).order(ByteOrder.LITTLE_ENDIAN);
      } catch (RuntimeException | Error e) {
        budget.release(bytes, MemoryBudget.Use.BATCHES);
        throw e;
      }
      forced.add(b);
    }
    b.clear();
    return b;
  }

  private void giveBack(ByteBuffer b) {
    if (forced.remove(b)) {
      budget.release(b.capacity(), MemoryBudget.Use.BATCHES);
    } else {
      pool.give((long) b.capacity(), b);
    }
  }

  /** Gives every row buffer back (the row being filled, those ready, the one handed out); safe to call twice. */
  void close() {
    if (row != null) {
      giveBack(row);
      row = null;
    }
    for (BatchRunner.Finished f : ready) {
      giveBack(f.output());
    }
    ready.clear();
    if (handedOut != null) {
      giveBack(handedOut);
      handedOut = null;
    }
  }
}
