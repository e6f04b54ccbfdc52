package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD32Async;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.volpool.backend.BatchExecutor;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * Runs one plan on one GPU with two slots for double buffering. Each slot has its own
 * non-blocking stream, pinned host input and output buffers (reused across batches) and device
 * buffers; submit queues host-to-device copy, kernels and device-to-host copy on the slot's
 * stream and returns, so the task thread can fill the other slot meanwhile. Holds one of the
 * device's task permits from construction to {@link #close()} (idempotent), which frees everything.
 */
final class CudaExecutor implements BatchExecutor {
  static final int SLOTS = 2;
  private static final int NAN_BITS = Float.floatToRawIntBits(Float.NaN);

  private final CudaDevice device;
  private final KernelPlan plan;
  private final KernelRunner runner;
  private final int maxBatch;
  private final boolean poison;
  private final Slot[] slots = new Slot[SLOTS];
  private final List<Runnable> frees = new ArrayList<>();
  private boolean closed;

  private final class Slot {
    final CUstream stream = new CUstream();
    final Pointer hostIn = new Pointer();
    final Pointer hostOut = new Pointer();
    final ByteBuffer in;
    final ByteBuffer out;
    final CUdeviceptr[] bufs;
    int n = -1;

    Slot(int index) {
      Cuda.check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate(slot " + index + ")");
      frees.add(() -> Cuda.check(cuStreamDestroy(stream), "cuStreamDestroy"));
      long inBytes = maxBatch * plan.shapes().get(0).bytes();
      long outBytes = maxBatch * plan.shapes().get(plan.outputBuffer()).bytes();
      Cuda.check(cuMemHostAlloc(hostIn, inBytes, 0), "cuMemHostAlloc(" + mib(inBytes) + " pinned input)");
      frees.add(() -> Cuda.check(cuMemFreeHost(hostIn), "cuMemFreeHost(pinned input)"));
      Cuda.check(cuMemHostAlloc(hostOut, outBytes, 0), "cuMemHostAlloc(" + mib(outBytes) + " pinned output)");
      frees.add(() -> Cuda.check(cuMemFreeHost(hostOut), "cuMemFreeHost(pinned output)"));
      in = hostIn.getByteBuffer(0, inBytes).order(ByteOrder.LITTLE_ENDIAN);
      out = hostOut.getByteBuffer(0, outBytes).order(ByteOrder.LITTLE_ENDIAN);
      bufs = new CUdeviceptr[plan.shapes().size()];
      for (int i = 0; i < bufs.length; i++) {
        if (plan.used(i)) {
          long b = maxBatch * plan.shapes().get(i).bytes();
          CUdeviceptr p = new CUdeviceptr();
          Cuda.check(cuMemAlloc(p, b), "cuMemAlloc(" + mib(b) + " device buffer " + i + " of slot " + index + ")");
          frees.add(() -> Cuda.check(cuMemFree(p), "cuMemFree(device buffer)"));
          bufs[i] = p;
        }
      }
    }
  }

  CudaExecutor(CudaDevice device, KernelPlan plan, int maxBatch, boolean poison) {
    this.device = device;
    this.plan = plan;
    this.maxBatch = maxBatch;
    this.poison = poison;
    device.permits.acquireUninterruptibly();
    frees.add(device.permits::release);
    device.makeCurrent();
    KernelRunner r = null;
    try {
      r = new KernelRunner(device, plan);
      final KernelRunner rr = r;
      frees.add(rr::close);
      for (int i = 0; i < SLOTS; i++) {
        slots[i] = new Slot(i);
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
    this.runner = r;
  }

  static String mib(long bytes) {
    return String.format("%.1f MiB", bytes / 1048576.0);
  }

  KernelPlan plan() {
    return plan;
  }

  @Override
  public int slots() {
    return SLOTS;
  }

  @Override
  public int maxBatch() {
    return maxBatch;
  }

  @Override
  public ByteBuffer input(int slot) {
    ByteBuffer b = slots[slot].in;
    b.clear();
    return b;
  }

  @Override
  public void submit(int slot, int n) {
    if (n < 1 || n > maxBatch) {
      throw new IllegalArgumentException("batch of " + n + " volumes; this executor takes 1.." + maxBatch);
    }
    device.makeCurrent();
    Slot s = slots[slot];
    VolumeShape in = plan.shapes().get(0);
    long inBytes = n * in.bytes();
    Cuda.check(cuMemcpyHtoDAsync(s.bufs[0], s.hostIn, inBytes, s.stream), "cuMemcpyHtoDAsync(" + mib(inBytes) + ")");
    if (poison) {
      for (int i = 1; i < s.bufs.length; i++) {
        if (s.bufs[i] != null) {
          Cuda.check(cuMemsetD32Async(s.bufs[i], NAN_BITS, n * plan.shapes().get(i).numel(), s.stream),
              "cuMemsetD32Async(poison buffer " + i + ")");
        }
      }
    }
    runner.launch(s.stream, s.bufs, n);
    int o = plan.outputBuffer();
    long outBytes = n * plan.shapes().get(o).bytes();
    Cuda.check(cuMemcpyDtoHAsync(s.hostOut, s.bufs[o], outBytes, s.stream), "cuMemcpyDtoHAsync(" + mib(outBytes) + ")");
    s.n = n;
  }

  @Override
  public ByteBuffer output(int slot) {
    Slot s = slots[slot];
    if (s.n < 0) {
      throw new IllegalStateException("output(" + slot + ") before submit");
    }
    device.makeCurrent();
    Cuda.check(cuStreamSynchronize(s.stream), "cuStreamSynchronize(slot " + slot + ", kernels " + plan.describe() + ")");
    ByteBuffer b = s.out.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    b.position(0).limit((int) (s.n * plan.shapes().get(plan.outputBuffer()).bytes()));
    s.n = -1;
    return b;
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    RuntimeException first = null;
    try {
      device.makeCurrent();
      for (Slot s : slots) {
        if (s != null) {
          Cuda.check(cuStreamSynchronize(s.stream), "cuStreamSynchronize(before free)");
        }
      }
    } catch (RuntimeException e) {
      first = e;
    }
    for (int i = frees.size() - 1; i >= 0; i--) {
      try {
        frees.get(i).run();
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        }
      }
    }
    frees.clear();
    if (first != null) {
      throw first;
    }
  }
}
