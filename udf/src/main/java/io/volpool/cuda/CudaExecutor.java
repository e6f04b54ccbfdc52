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
import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
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
  static final long STAGING_CHUNK = io.volpool.conf.InternalProperties.CUDA_STAGING_CHUNK_BYTES.longValue();

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
  /** The values batches take in: float32, or 8- or 16-bit values the device widens ({@link KernelRunner#widen}). */
  private final ValueType stored;
  private final boolean widens;
  /** Where the volumes' rescale pairs lie in the pinned block (when it widens). */
  private final long paramsAt;
  /** Device buffers after the plan's: the narrowed output, the stored input, the rescale pairs. */
  private final int narrowBuf;
  private final int storedBuf;
  private final int paramsBuf;

  CudaExecutor(CudaDevice device, KernelPlan plan, int maxBatch, int gap,
      BufferPool<CudaBackend.PinnedKey, CudaBackend.PinnedBlock> pinned, boolean poison) {
    this.device = device;
    this.plan = plan;
    this.maxBatch = maxBatch;
    this.gap = gap;
    this.pinned = pinned;
    this.poison = poison;
    this.stored = plan.stored();
    this.widens = !stored.isFloat32();
    this.inBytes = plan.inputBytes();
    // the float32 output's room per volume (offsets keep it); the copy back moves plan.outputBytes() of it
    this.outBytes = plan.shapes().get(plan.outputBuffer()).bytes();
    this.copyBytes = plan.outputBytes();
    this.chunk = align(Math.min(STAGING_CHUNK, maxBatch * inBytes));
    this.outAt = 2 * chunk;
    this.paramsAt = align(outAt + maxBatch * (gap + outBytes));
    this.hostKey = new CudaBackend.PinnedKey(device.ordinal, pinnedBytes(plan, stored, maxBatch, gap));
    java.util.List<Long> sizes = new java.util.ArrayList<>();
    for (int i = 0; i < plan.shapes().size(); i++) {
      sizes.add(maxBatch * plan.bufferBytes(i));
    }
    this.narrowBuf = sizes.size();
    this.storedBuf = narrowBuf + 1;
    this.paramsBuf = narrowBuf + 2;
    sizes.add(maxBatch * plan.narrowBufferBytes());
    sizes.add(plan.widens() ? (maxBatch * inBytes + 3) & ~3L : 0L);
    sizes.add(widens ? maxBatch * 8L : 0L);
    this.slotKey = new DeviceSlot.Key(java.util.List.copyOf(sizes));
    this.what = "a GPU batch of " + maxBatch + " volumes " + plan.shapes().get(0) + (widens ? " of " + stored : "")
        + " through " + plan.describe();
  }

  /** Pinned bytes one batch of {@code n} float32 volumes holds: two input staging chunks, then the output with its gaps. */
  static long pinnedBytes(KernelPlan plan, int n, int gap) {
    return pinnedBytes(plan, ValueType.FLOAT32, n, gap);
  }

  /** As above, for volumes staged as {@code stored} values (then the rescale pairs follow the output). */
  static long pinnedBytes(KernelPlan plan, ValueType stored, int n, int gap) {
    long in = plan.shapes().get(0).numel() * stored.itemSize();
    long out = plan.shapes().get(plan.outputBuffer()).bytes();
    long b = 2 * align(Math.min(STAGING_CHUNK, n * in)) + n * (gap + out);
    return stored.isFloat32() ? b : align(b) + n * 8L;
  }

  @Override
  public ValueType stored() {
    return stored;
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
    if (b.sink.pos != n * inBytes || (widens && b.rescaled != n)) {
      throw new IllegalStateException("batch input holds " + b.sink.pos + " bytes (" + b.rescaled + " rescales set),"
          + " expected " + n + " volumes of " + plan.shapes().get(0) + " " + stored + " = " + n * inBytes);
    }
    device.makeCurrent();
    DeviceSlot s = b.slot;
    b.sink.flush();
    if (!b.sink.started) {
      Cuda.check(cuEventRecord(s.events[0], s.stream), "cuEventRecord");
    }
    if (widens) {
      Cuda.check(cuMemcpyHtoDAsync(s.buffers[paramsBuf], b.host.pointer().withByteOffset(paramsAt), n * 8L, s.stream),
          "cuMemcpyHtoDAsync(rescale of " + n + " volumes)");
    }
    Cuda.check(cuEventRecord(s.events[1], s.stream), "cuEventRecord");
    if (poison) {
      // every buffer a kernel writes (the input too, when the device widens into it) starts as NaN
      for (int i = plan.widens() ? 0 : 1; i <= narrowBuf; i++) {
        if (s.buffers[i] != null) {
          long words = i < plan.shapes().size() ? n * plan.bufferBytes(i) / 4 : n * plan.narrowBufferBytes() / 4;
          Cuda.check(cuMemsetD32Async(s.buffers[i], NAN_BITS, words, s.stream), "cuMemsetD32Async(poison buffer " + i + ")");
        }
      }
    }
    KernelRunner runner = s.runner(plan);
    if (plan.widens()) {
      runner.widen(s.stream, s.buffers[storedBuf], s.buffers[0], s.buffers[paramsBuf], n, plan.shapes().get(0).numel(),
          stored);
    }
    runner.launch(s.stream, s.buffers, n, s.buffers[paramsBuf]);
    CUdeviceptr src = s.buffers[plan.outputBuffer()];
    long srcPitch = outBytes;
    if (plan.narrowKernel() != null) {
      // narrowed on the device: the copy back moves the narrow bytes only
      CUdeviceptr narrow = s.buffers[narrowBuf];
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
    int rescaled;
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
    public void rescale(int i, Rescale r) {
      if (!widens || i != rescaled || i >= maxBatch || sink.pos != i * inBytes) {
        throw new IllegalStateException("rescale(" + i + ") on a GPU batch of " + stored + " holding " + sink.pos
            + " bytes");
      }
      ByteBuffer p = host.buffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
      p.putFloat((int) (paramsAt + i * 8L), r.slope()).putFloat((int) (paramsAt + i * 8L + 4), r.intercept());
      rescaled++;
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
        long kernels = elapsedNanos(1, 2);
        long d2h = elapsedNanos(2, 3);
        times.add(Phase.KERNELS, kernels);
        times.add(Phase.D2H, d2h);
        device.kernelNanos.addAndGet(kernels);
        device.busyNanos.addAndGet(kernels + d2h);
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
      Cuda.check(cuMemcpyHtoDAsync(s.buffers[plan.widens() ? storedBuf : 0].withByteOffset(devAt), b.host.pointer().withByteOffset(cur * chunk), fill,
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
