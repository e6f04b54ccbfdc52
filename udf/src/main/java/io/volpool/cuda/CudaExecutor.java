package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD32Async;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.volpool.backend.Batch;
import io.volpool.backend.BatchExecutor;
import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.VolumeSink;
import io.volpool.memory.BufferPool;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.driver.CUdeviceptr;

/**
 * Runs one plan on one GPU for one task. A batch takes a {@link DeviceSlot} (device buffers, its
 * own stream) from the device's pool and one pinned host block from the backend's budgeted pool:
 * two staging chunks for the input and the output area. Readers write the input into the staging
 * chunks, and each full chunk is copied to the device right away on the batch's stream while the
 * reader fills the other one, so a volume of any size passes through a few MiB of pinned memory
 * and its copy overlaps its reading. {@link #submit} queues the kernels and a strided copy of the
 * output (the caller's gap before each volume) and returns; {@link Batch#output()} waits for it.
 * Nothing is shared between batches while they run, so a task never waits for another's GPU work.
 */
final class CudaExecutor implements BatchExecutor {
  private static final int NAN_BITS = Float.floatToRawIntBits(Float.NaN);
  /** Bytes of one input staging chunk (two per batch); small volumes batch whole into them. */
  static final long STAGING_CHUNK = Long.getLong("volpool.cuda.stagingChunkBytes", 8L << 20);

  private final CudaDevice device;
  private final KernelPlan plan;
  private final int maxBatch;
  private final int gap;
  private final boolean poison;
  private final BufferPool<CudaBackend.PinnedKey, CudaBackend.PinnedBlock> pinned;
  private final long inBytes;
  private final long outBytes;
  private final long copyBytes;
  private final long chunk;
  private final long outAt;
  private final CudaBackend.PinnedKey hostKey;
  private final DeviceSlot.Key slotKey;
  private final String what;

  CudaExecutor(CudaDevice device, KernelPlan plan, int maxBatch, int gap,
      BufferPool<CudaBackend.PinnedKey, CudaBackend.PinnedBlock> pinned, boolean poison) {
    this.device = device;
    this.plan = plan;
    this.maxBatch = maxBatch;
    this.gap = gap;
    this.pinned = pinned;
    this.poison = poison;
    this.inBytes = plan.shapes().get(0).bytes();
    // the float32 output's room per volume (offsets keep it); the copy back moves plan.outputBytes() of it
    this.outBytes = plan.shapes().get(plan.outputBuffer()).bytes();
    this.copyBytes = plan.outputBytes();
    this.chunk = align(Math.min(STAGING_CHUNK, maxBatch * inBytes));
    this.outAt = 2 * chunk;
    this.hostKey = new CudaBackend.PinnedKey(device.ordinal, pinnedBytes(plan, maxBatch, gap));
    java.util.List<Long> sizes = new java.util.ArrayList<>();
    for (int i = 0; i < plan.shapes().size(); i++) {
      sizes.add(plan.used(i) ? maxBatch * plan.shapes().get(i).bytes() : 0L);
    }
    // the narrowed output, after the plan's buffers
    sizes.add(maxBatch * plan.narrowBufferBytes());
    this.slotKey = new DeviceSlot.Key(java.util.List.copyOf(sizes));
    this.what = "a GPU batch of " + maxBatch + " volumes " + plan.shapes().get(0) + " through " + plan.describe();
  }

  /** Pinned bytes one batch of {@code n} volumes holds: two input staging chunks, then the output with its gaps. */
  static long pinnedBytes(KernelPlan plan, int n, int gap) {
    long in = plan.shapes().get(0).bytes();
    long out = plan.shapes().get(plan.outputBuffer()).bytes();
    return 2 * align(Math.min(STAGING_CHUNK, n * in)) + n * (gap + out);
  }

  private static long align(long b) {
    return (b + 255) & ~255L;
  }

  static String mib(long bytes) {
    return String.format("%.1f MiB", bytes / 1048576.0);
  }

  KernelPlan plan() {
    return plan;
  }

  @Override
  public int maxBatch() {
    return maxBatch;
  }

  @Override
  public long batchBytes() {
    return hostKey.bytes();
  }

  @Override
  public Batch newBatch(boolean mayWait) {
    device.makeCurrent();
    // device memory first, then host memory: one order for every task, so waits cannot form a cycle
    DeviceSlot slot = device.slots.take(slotKey, mayWait, () -> what + " (device buffers)");
    if (slot == null) {
      return null;
    }
    CudaBackend.PinnedBlock host;
    try {
      host = pinned.take(hostKey, mayWait, () -> what + " (pinned staging and output)");
    } catch (RuntimeException e) {
      device.slots.give(slotKey, slot);
      throw e;
    }
    if (host == null) {
      device.slots.give(slotKey, slot);
      return null;
    }
    return new GpuBatch(slot, host);
  }

  @Override
  public boolean submit(Batch batch, int n, boolean mayWait) {
    GpuBatch b = (GpuBatch) batch;
    if (n < 1 || n > maxBatch) {
      throw new IllegalArgumentException("batch of " + n + " volumes; this executor takes 1.." + maxBatch);
    }
    if (b.sink.pos != n * inBytes) {
      throw new IllegalStateException("batch input holds " + b.sink.pos + " bytes, expected " + n + " volumes of "
          + plan.shapes().get(0) + " = " + n * inBytes);
    }
    device.makeCurrent();
    DeviceSlot s = b.slot;
    b.sink.flush();
    if (!b.sink.started) {
      Cuda.check(cuEventRecord(s.events[0], s.stream), "cuEventRecord");
    }
    Cuda.check(cuEventRecord(s.events[1], s.stream), "cuEventRecord");
    if (poison) {
      for (int i = 1; i < s.buffers.length; i++) {
        if (s.buffers[i] != null) {
          long words = i < plan.shapes().size() ? n * plan.shapes().get(i).numel() : n * plan.narrowBufferBytes() / 4;
          Cuda.check(cuMemsetD32Async(s.buffers[i], NAN_BITS, words, s.stream), "cuMemsetD32Async(poison buffer " + i + ")");
        }
      }
    }
    KernelRunner runner = s.runner(plan);
    runner.launch(s.stream, s.buffers, n);
    CUdeviceptr src = s.buffers[plan.outputBuffer()];
    long srcPitch = outBytes;
    if (plan.narrowKernel() != null) {
      // narrowed on the device: the copy back moves the narrow bytes only
      CUdeviceptr narrow = s.buffers[s.buffers.length - 1];
      runner.narrow(s.stream, src, narrow, n * plan.shapes().get(plan.outputBuffer()).numel());
      src = narrow;
      srcPitch = copyBytes;
    }
    Cuda.check(cuEventRecord(s.events[2], s.stream), "cuEventRecord");
    // each volume's output after the caller's gap
    StridedCopy.copy(s.stream, device.maxPitch, StridedCopy.At.device(src), srcPitch,
        StridedCopy.At.host(b.host.pointer().withByteOffset(outAt + gap)), gap + outBytes, copyBytes, n,
        "batch output to host");
    Cuda.check(cuEventRecord(s.events[3], s.stream), "cuEventRecord");
    b.n = n;
    return true;
  }

  @Override
  public void close() {
    // batches give their slots and pinned memory back themselves
  }

  private final class GpuBatch implements Batch {
    final DeviceSlot slot;
    final CudaBackend.PinnedBlock host;
    final StagingSink sink;
    final PhaseTimes times = new PhaseTimes();
    int n = -1;
    boolean done;
    boolean closed;

    GpuBatch(DeviceSlot slot, CudaBackend.PinnedBlock host) {
      this.slot = slot;
      this.host = host;
      this.sink = new StagingSink(this);
    }

    @Override
    public VolumeSink input() {
      return sink;
    }

    @Override
    public ByteBuffer output() {
      if (n < 0) {
        throw new IllegalStateException("output() before submit()");
      }
      if (!done) {
        device.makeCurrent();
        long t0 = System.nanoTime();
        Cuda.check(cuEventSynchronize(slot.events[3]), "cuEventSynchronize(batch of " + n + ", " + plan.describe() + ")");
        times.add(Phase.WAIT_GPU, System.nanoTime() - t0);
        times.add(Phase.KERNELS, elapsedNanos(1, 2));
        times.add(Phase.D2H, elapsedNanos(2, 3));
        done = true;
      }
      ByteBuffer o = host.buffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
      o.position((int) outAt).limit((int) (outAt + n * (gap + outBytes)));
      return o.slice().order(ByteOrder.LITTLE_ENDIAN);
    }

    private long elapsedNanos(int from, int to) {
      float[] ms = new float[1];
      Cuda.check(cuEventElapsedTime(ms, slot.events[from], slot.events[to]), "cuEventElapsedTime");
      return (long) (ms[0] * 1e6);
    }

    @Override
    public long outputOffset(int i) {
      return i * (gap + outBytes) + gap;
    }

    @Override
    public PhaseTimes times() {
      return times;
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      try {
        device.makeCurrent();
        // work still queued (a failure before output()) must finish before the buffers are reused
        Cuda.check(cuStreamSynchronize(slot.stream), "cuStreamSynchronize(batch closed)");
      } finally {
        pinned.give(hostKey, host);
        device.slots.give(slotKey, slot);
      }
    }
  }

  /**
   * The input of a GPU batch: two pinned staging chunks used in turn; a full chunk is copied to the
   * batch's device input buffer at once (asynchronously), and a chunk is written again only after
   * its copy has finished.
   */
  private final class StagingSink implements VolumeSink {
    private final GpuBatch b;
    private final ByteBuffer host;
    long pos;
    private int cur;
    private long fill;
    private final boolean[] busy = new boolean[2];
    boolean started;

    StagingSink(GpuBatch b) {
      this.b = b;
      this.host = b.host.buffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    private void check(long n) {
      if (pos + n > maxBatch * inBytes) {
        throw new IllegalStateException("batch input overflow: " + (pos + n) + " bytes into " + maxBatch * inBytes);
      }
    }

    /** Waits until the current chunk's last copy has finished, so it may be written again. */
    private void ready() {
      if (busy[cur]) {
        long t0 = System.nanoTime();
        device.makeCurrent();
        Cuda.check(cuEventSynchronize(b.slot.chunkDone[cur]), "cuEventSynchronize(staging chunk copy)");
        b.times.add(Phase.H2D, System.nanoTime() - t0);
        busy[cur] = false;
      }
    }

    /** Copies what the current chunk holds to the device and moves to the other chunk. */
    void flush() {
      if (fill == 0) {
        return;
      }
      device.makeCurrent();
      DeviceSlot s = b.slot;
      if (!started) {
        Cuda.check(cuEventRecord(s.events[0], s.stream), "cuEventRecord");
        started = true;
      }
      long devAt = pos - fill;
      Cuda.check(cuMemcpyHtoDAsync(s.buffers[0].withByteOffset(devAt), b.host.pointer().withByteOffset(cur * chunk), fill,
          s.stream), "cuMemcpyHtoDAsync(" + mib(fill) + " staged input)");
      Cuda.check(cuEventRecord(s.chunkDone[cur], s.stream), "cuEventRecord");
      busy[cur] = true;
      cur ^= 1;
      fill = 0;
    }

    @Override
    public ByteBuffer window(int max) {
      check(1);
      ready();
      int n = (int) Math.min(max, chunk - fill);
      if (max >= 4 && n >= 4) {
        n &= ~3;
      }
      return host.slice((int) (cur * chunk + fill), n).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public void advance(int n) {
      check(n);
      fill += n;
      pos += n;
      if (fill == chunk) {
        flush();
      }
    }

    @Override
    public void put(ByteBuffer src) {
      while (src.hasRemaining()) {
        ByteBuffer w = window(src.remaining());
        int k = w.remaining();
        w.put(src.slice(src.position(), k));
        src.position(src.position() + k);
        advance(k);
      }
    }

    @Override
    public void putFloat(float v) {
      ByteBuffer w = window(4);
      w.putFloat(0, v);
      advance(4);
    }

    @Override
    public long position() {
      return pos;
    }
  }
}
