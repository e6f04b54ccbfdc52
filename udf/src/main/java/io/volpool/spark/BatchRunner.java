package io.volpool.spark;

import io.volpool.backend.Backend;
import io.volpool.backend.BatchExecutor;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Groups consecutive volumes of one shape into batches and runs them through a backend, keeping
 * every slot of the executor busy: while the backend works on one batch, the task thread copies
 * the next batch's volumes into the next slot. Lazy: pulls input only as slots free up, so a
 * partition streams with bounded memory. Owns its executor; closes it when input ends or on {@link #close()}.
 *
 * @param <T> input volumes
 * @param <R> results, at most one per input volume, in input order
 */
public final class BatchRunner<T extends VolumeSource, R> implements Iterator<R>, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(BatchRunner.class);
  private static final long PROGRESS_EVERY_NANOS = 30_000_000_000L;

  /**
   * Turns one output volume into a result; {@code output} is valid only during the call. Returns
   * null when the volume yields no result of its own (e.g. all but the last volume of an .npy batch).
   */
  @FunctionalInterface
  public interface Emitter<T, R> {
    R emit(T item, VolumeShape outShape, ByteBuffer output);
  }

  private record InFlight<T>(int slot, List<T> items) {}

  private final Iterator<T> input;
  private final Backend backend;
  private final RunSpec spec;
  private final Emitter<T, R> emitter;
  private final String taskName;
  private final ArrayDeque<R> ready = new ArrayDeque<>();
  private final ArrayDeque<InFlight<T>> inflight = new ArrayDeque<>();
  private T peeked;
  private BatchExecutor exec;
  private VolumeShape execShape;
  private VolumeShape outShape;
  private boolean[] busy;
  private long volumesIn;
  private long bytesIn;
  private long bytesOut;
  private long batches;
  private final long started = System.nanoTime();
  private long lastLog = started;

  public BatchRunner(Iterator<T> input, Backend backend, RunSpec spec, Emitter<T, R> emitter, String taskName) {
    this.input = input;
    this.backend = backend;
    this.spec = spec;
    this.emitter = emitter;
    this.taskName = taskName;
  }

  @Override
  public boolean hasNext() {
    while (ready.isEmpty() && advance()) {
      // keep going until a result is ready or input is exhausted
    }
    return !ready.isEmpty();
  }

  @Override
  public R next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    return ready.poll();
  }

  public long volumesIn() {
    return volumesIn;
  }

  public long bytesIn() {
    return bytesIn;
  }

  public long bytesOut() {
    return bytesOut;
  }

  public long batches() {
    return batches;
  }

  private T peek() {
    if (peeked == null && input.hasNext()) {
      peeked = input.next();
    }
    return peeked;
  }

  private T take() {
    T t = peek();
    peeked = null;
    return t;
  }

  private boolean advance() {
    while (true) {
      T item = peek();
      if (item == null) {
        break;
      }
      VolumeShape s = item.shape();
      if (exec != null && !s.equals(execShape)) {
        if (!inflight.isEmpty()) {
          break;
        }
        closeExecutor();
      }
      if (exec == null) {
        openExecutor(s, item.record());
      }
      int slot = freeSlot();
      if (slot < 0) {
        break;
      }
      fill(slot);
    }
    if (inflight.isEmpty()) {
      closeExecutor();
      return false;
    }
    InFlight<T> f = inflight.poll();
    ByteBuffer out = exec.output(f.slot());
    int ob = (int) outShape.bytes();
    for (int i = 0; i < f.items().size(); i++) {
      ByteBuffer v = out.slice(i * ob, ob).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      R r = emitter.emit(f.items().get(i), outShape, v);
      if (r != null) {
        ready.add(r);
      }
    }
    bytesOut += (long) ob * f.items().size();
    busy[f.slot()] = false;
    maybeLog();
    return true;
  }

  private void fill(int slot) {
    ByteBuffer in = exec.input(slot);
    List<T> items = new ArrayList<>();
    while (items.size() < exec.maxBatch()) {
      T item = peek();
      if (item == null || !item.shape().equals(execShape)) {
        break;
      }
      item.copyTo(in);
      items.add(take());
      volumesIn++;
      bytesIn += execShape.bytes();
    }
    exec.submit(slot, items.size());
    busy[slot] = true;
    batches++;
    inflight.add(new InFlight<>(slot, items));
  }

  private int freeSlot() {
    for (int i = 0; i < busy.length; i++) {
      if (!busy[i]) {
        return i;
      }
    }
    return -1;
  }

  private void openExecutor(VolumeShape s, String record) {
    Pipeline p = spec.pipeline();
    try {
      outShape = p.outputShape(s);
    } catch (IllegalArgumentException e) {
      throw new BadRecordException(record, "shape " + s + " cannot go through pipeline " + p.describe() + ": "
          + e.getMessage());
    }
    int batch = spec.batchSize() > 0 ? spec.batchSize() : backend.suggestBatch(p, s);
    try {
      exec = backend.open(p, s, batch);
    } catch (IllegalArgumentException e) {
      throw new BadRecordException(record, e.getMessage(), e);
    }
    execShape = s;
    busy = new boolean[exec.slots()];
    LOG.info("{}: {} volumes {} -> {} on {}, batches of up to {} ({} slots)", taskName, p.describe(), s, outShape,
        backend.name(), exec.maxBatch(), exec.slots());
  }

  private void closeExecutor() {
    if (exec != null) {
      exec.close();
      exec = null;
      execShape = null;
    }
  }

  private void maybeLog() {
    long now = System.nanoTime();
    if (now - lastLog >= PROGRESS_EVERY_NANOS) {
      lastLog = now;
      double secs = (now - started) / 1e9;
      LOG.info("{}: {} volumes in {} batches, {} MiB in, {} s, {} volumes/s", taskName, volumesIn, batches,
          bytesIn >> 20, String.format("%.1f", secs), String.format("%.1f", volumesIn / secs));
    }
  }

  /** Releases the executor (device buffers, pinned memory); safe to call twice. */
  @Override
  public void close() {
    inflight.clear();
    closeExecutor();
  }
}
