package io.volpool.cuda;

import io.volpool.conf.VolpoolOptions;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * What one batch holds on a GPU: its device buffers (one per buffer of the plan, sized for the
 * largest batch), its own stream, the events that time its phases and pace its staged input copies,
 * and the kernel runners of the plans it ran. Batches take a slot from the device's pool for their
 * whole life and give it back when closed, so slots are reused across tasks; used by one thread at a
 * time; freed by the pool.
 */
final class DeviceSlot {
  /** Buffer sizes in bytes by plan buffer index (0 when unused). */
  record Key(List<Long> sizes) {
    long bytes() {
      return sizes.stream().mapToLong(Long::longValue).sum();
    }
  }

  /** Kernel runners kept per slot (a job runs one or two plans). */
  private static final int RUNNERS = 2;

  final CudaDevice device;
  final CUstream stream = new CUstream();
  /** Before the first input copy, after the last, after the kernels, after the output copy. */
  final CUevent[] events = new CUevent[4];
  /** Completion of the copy from each of the two staging chunks. */
  final CUevent[] chunkDone = new CUevent[2];
  final CUdeviceptr[] buffers;
  private final Map<KernelPlan, KernelRunner> runners = new IdentityHashMap<>();
  private final List<KernelPlan> order = new ArrayList<>();

  DeviceSlot(CudaDevice device, Key key) {
    this.device = device;
    device.makeCurrent();
    Cuda.check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    for (int i = 0; i < events.length; i++) {
      events[i] = new CUevent();
      Cuda.check(cuEventCreate(events[i], CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate");
    }
    for (int i = 0; i < chunkDone.length; i++) {
      chunkDone[i] = new CUevent();
      Cuda.check(cuEventCreate(chunkDone[i], CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    }
    buffers = new CUdeviceptr[key.sizes().size()];
    try {
      for (int i = 0; i < buffers.length; i++) {
        long b = key.sizes().get(i);
        if (b > 0) {
          CUdeviceptr p = new CUdeviceptr();
          int r = cuMemAlloc(p, b);
          if (r != 0) {
            throw new CudaException("cuMemAlloc(" + CudaExecutor.mib(b) + " for batch buffer " + i + ") on " + device.name
                + " (device " + device.ordinal + ", " + CudaExecutor.mib(device.memInfo()[0]) + " free) failed with code "
                + r + "; lower " + VolpoolOptions.GPU_MEMORY_FRACTION.key() + " or"
                    + " " + VolpoolOptions.BATCH_SIZE.key() + ", or another process uses the GPU", r);
          }
          buffers[i] = p;
        }
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** The kernel runner of {@code plan} on this slot's buffers. */
  KernelRunner runner(KernelPlan plan) {
    KernelRunner r = runners.get(plan);
    if (r == null) {
      if (order.size() >= RUNNERS) {
        runners.remove(order.remove(0)).close();
      }
      r = new KernelRunner(device, plan);
      runners.put(plan, r);
      order.add(plan);
    }
    return r;
  }

  void close() {
    device.makeCurrent();
    Cuda.check(cuStreamSynchronize(stream), "cuStreamSynchronize(before freeing a batch slot)");
    for (KernelRunner r : runners.values()) {
      r.close();
    }
    runners.clear();
    for (CUdeviceptr p : buffers) {
      if (p != null) {
        Cuda.check(cuMemFree(p), "cuMemFree(batch buffer)");
      }
    }
    for (CUevent e : events) {
      if (e != null) {
        Cuda.check(cuEventDestroy(e), "cuEventDestroy");
      }
    }
    for (CUevent e : chunkDone) {
      if (e != null) {
        Cuda.check(cuEventDestroy(e), "cuEventDestroy");
      }
    }
    Cuda.check(cuStreamDestroy(stream), "cuStreamDestroy");
  }
}
