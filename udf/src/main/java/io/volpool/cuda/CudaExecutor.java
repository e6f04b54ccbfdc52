package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemcpy2DAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD32Async;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.volpool.backend.Batch;
import io.volpool.backend.BatchExecutor;
import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.VolumeSink;
import io.volpool.memory.BufferPool;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.driver.CUDA_MEMCPY2D;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUmemorytype;

/**
 * Runs one plan on one GPU for one task. A batch's pinned host memory (input, then output with the
 * caller's gap before each volume) comes from the backend's budgeted pool; {@link #submit} borrows a
 * {@link Lane} of the device, queues host-to-device copy, kernels and a strided device-to-host copy
 * on its stream with events between them, and returns; {@link Batch#output()} waits, reads the
 * event times and gives the lane back. So a task holds the GPU only while its copies and kernels
 * run. Closing the executor frees nothing shared; batches give their memory back themselves.
 */
final class CudaExecutor implements BatchExecutor {
  private static final int NAN_BITS = Float.floatToRawIntBits(Float.NaN);

  private final CudaDevice device;
  private final KernelPlan plan;
  private final int maxBatch;
  private final int gap;
  private final boolean poison;
  private final BufferPool<CudaBackend.PinnedKey, CudaBackend.PinnedBlock> pinned;
  private final long inBytes;
  private final long outBytes;
  private final long blockBytes;
  private final CudaBackend.PinnedKey key;
  private final String what;

  CudaExecutor(CudaDevice device, KernelPlan plan, int maxBatch, int gap, BufferPool<CudaBackend.PinnedKey, CudaBackend.PinnedBlock> pinned,
      boolean poison) {
    this.device = device;
    this.plan = plan;
    this.maxBatch = maxBatch;
    this.gap = gap;
    this.pinned = pinned;
    this.poison = poison;
    this.inBytes = plan.shapes().get(0).bytes();
    this.outBytes = plan.shapes().get(plan.outputBuffer()).bytes();
    this.blockBytes = align(maxBatch * inBytes) + maxBatch * (gap + outBytes);
    this.key = new CudaBackend.PinnedKey(device.ordinal, blockBytes);
    this.what = "a GPU batch of " + maxBatch + " volumes " + plan.shapes().get(0) + " (pinned input and output)";
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
    return blockBytes;
  }

  @Override
  public Batch newBatch(boolean mayWait) {
    device.makeCurrent();
    CudaBackend.PinnedBlock b = pinned.take(key, mayWait, () -> what);
    return b == null ? null : new GpuBatch(b);
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
    long t0 = System.nanoTime();
    Lane lane = device.acquireLane(mayWait);
    b.times.add(Phase.WAIT_GPU, System.nanoTime() - t0);
    if (lane == null) {
      return false;
    }
    try {
      device.makeCurrent();
      CUdeviceptr[] bufs = new CUdeviceptr[plan.shapes().size()];
      for (int i = 0; i < bufs.length; i++) {
        if (plan.used(i)) {
          bufs[i] = lane.buffer(i, maxBatch * plan.shapes().get(i).bytes(), "batch buffer " + i + " of " + plan.describe());
        }
      }
      Cuda.check(cuEventRecord(lane.events[0], lane.stream), "cuEventRecord");
      Cuda.check(cuMemcpyHtoDAsync(bufs[0], b.block.pointer(), n * inBytes, lane.stream),
          "cuMemcpyHtoDAsync(" + mib(n * inBytes) + ")");
      Cuda.check(cuEventRecord(lane.events[1], lane.stream), "cuEventRecord");
      if (poison) {
        for (int i = 1; i < bufs.length; i++) {
          if (bufs[i] != null) {
            Cuda.check(cuMemsetD32Async(bufs[i], NAN_BITS, n * plan.shapes().get(i).numel(), lane.stream),
                "cuMemsetD32Async(poison buffer " + i + ")");
          }
        }
      }
      lane.runner(plan).launch(lane.stream, bufs, n);
      Cuda.check(cuEventRecord(lane.events[2], lane.stream), "cuEventRecord");
      CUdeviceptr src = bufs[plan.outputBuffer()];
      long outAt = align(maxBatch * inBytes);
      if (gap == 0) {
        Cuda.check(cuMemcpyDtoHAsync(b.block.pointer().withByteOffset(outAt), src, n * outBytes, lane.stream),
            "cuMemcpyDtoHAsync(" + mib(n * outBytes) + ")");
      } else {
        CUDA_MEMCPY2D c = new CUDA_MEMCPY2D();
        c.srcMemoryType = CUmemorytype.CU_MEMORYTYPE_DEVICE;
        c.srcDevice = src;
        c.srcPitch = outBytes;
        c.dstMemoryType = CUmemorytype.CU_MEMORYTYPE_HOST;
        c.dstHost = b.block.pointer().withByteOffset(outAt + gap);
        c.dstPitch = gap + outBytes;
        c.WidthInBytes = outBytes;
        c.Height = n;
        Cuda.check(cuMemcpy2DAsync(c, lane.stream), "cuMemcpy2DAsync(" + n + " x " + mib(outBytes) + " to host)");
      }
      Cuda.check(cuEventRecord(lane.events[3], lane.stream), "cuEventRecord");
    } catch (RuntimeException e) {
      try {
        Cuda.check(cuStreamSynchronize(lane.stream), "cuStreamSynchronize(after a failed submit)");
      } finally {
        device.releaseLane(lane);
      }
      throw e;
    }
    b.lane = lane;
    b.n = n;
    return true;
  }

  @Override
  public void close() {
    // batches give their pinned memory and lanes back themselves
  }

  private final class GpuBatch implements Batch {
    final CudaBackend.PinnedBlock block;
    final PinnedSink sink;
    final PhaseTimes times = new PhaseTimes();
    Lane lane;
    int n = -1;
    boolean closed;

    GpuBatch(CudaBackend.PinnedBlock block) {
      this.block = block;
      this.sink = new PinnedSink(block.buffer().duplicate().order(ByteOrder.LITTLE_ENDIAN), maxBatch * inBytes);
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
      if (lane != null) {
        device.makeCurrent();
        Lane l = lane;
        lane = null;
        try {
          Cuda.check(cuEventSynchronize(l.events[3]), "cuEventSynchronize(batch of " + n + ", " + plan.describe() + ")");
          times.add(Phase.H2D, elapsedNanos(l, 0, 1));
          times.add(Phase.KERNELS, elapsedNanos(l, 1, 2));
          times.add(Phase.D2H, elapsedNanos(l, 2, 3));
        } finally {
          device.releaseLane(l);
        }
      }
      long outAt = align(maxBatch * inBytes);
      ByteBuffer o = block.buffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
      o.position((int) outAt).limit((int) (outAt + n * (gap + outBytes)));
      return o.slice().order(ByteOrder.LITTLE_ENDIAN);
    }

    private long elapsedNanos(Lane l, int from, int to) {
      float[] ms = new float[1];
      Cuda.check(cuEventElapsedTime(ms, l.events[from], l.events[to]), "cuEventElapsedTime");
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
        if (lane != null) {
          Lane l = lane;
          lane = null;
          device.makeCurrent();
          try {
            Cuda.check(cuStreamSynchronize(l.stream), "cuStreamSynchronize(batch closed before its output)");
          } finally {
            device.releaseLane(l);
          }
        }
      } finally {
        pinned.give(key, block);
      }
    }
  }

  /** Writes volumes into the pinned input; readers may fill a window of it in place. */
  static final class PinnedSink implements VolumeSink {
    private final ByteBuffer buf;
    private final long capacity;
    long pos;

    PinnedSink(ByteBuffer buf, long capacity) {
      this.buf = buf;
      this.capacity = capacity;
    }

    private void check(long n) {
      if (pos + n > capacity) {
        throw new IllegalStateException("batch input overflow: " + (pos + n) + " bytes into " + capacity);
      }
    }

    @Override
    public void put(ByteBuffer src) {
      int n = src.remaining();
      check(n);
      buf.position((int) pos);
      buf.put(src);
      pos += n;
    }

    @Override
    public void putFloat(float v) {
      check(4);
      buf.putFloat((int) pos, v);
      pos += 4;
    }

    @Override
    public ByteBuffer window(int n) {
      check(n);
      return buf.slice((int) pos, n).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public void advance(int n) {
      check(n);
      pos += n;
    }

    @Override
    public long position() {
      return pos;
    }
  }
}
