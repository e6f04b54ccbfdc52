package io.volpool.cuda;

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
 * One stream of a GPU with the device buffers and kernel runners of the batches it carries: a
 * batch borrows a lane for its host-to-device copy, kernels and device-to-host copy, then gives it
 * back, so a device runs at most {@code spark.volpool.gpu.streams} batches at once whatever the
 * number of tasks. Device buffers grow to the largest batch seen and are reused. Used by one
 * thread at a time (whoever holds it); owned and closed by its {@link CudaDevice}.
 */
final class Lane {
  /** Kernel runners kept per lane (a job runs one or two plans). */
  private static final int RUNNERS = 4;

  final CudaDevice device;
  final int index;
  final CUstream stream = new CUstream();
  /** Events around the batch's phases: before H2D, after H2D, after kernels, after D2H. */
  final CUevent[] events = new CUevent[4];
  private final List<CUdeviceptr> buffers = new ArrayList<>();
  private final List<Long> capacity = new ArrayList<>();
  private final Map<KernelPlan, KernelRunner> runners = new IdentityHashMap<>();
  private final List<KernelPlan> runnerOrder = new ArrayList<>();

  Lane(CudaDevice device, int index) {
    this.device = device;
    this.index = index;
    Cuda.check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate(lane " + index + ")");
    for (int i = 0; i < events.length; i++) {
      events[i] = new CUevent();
      Cuda.check(cuEventCreate(events[i], CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate(lane " + index + ")");
    }
  }

  /** Device buffer {@code i} with room for {@code bytes}, reallocated when too small (the lane is idle while held). */
  CUdeviceptr buffer(int i, long bytes, String what) {
    while (buffers.size() <= i) {
      buffers.add(null);
      capacity.add(0L);
    }
    if (capacity.get(i) < bytes) {
      if (buffers.get(i) != null) {
        Cuda.check(cuMemFree(buffers.get(i)), "cuMemFree(lane " + index + " buffer " + i + ")");
        buffers.set(i, null);
        capacity.set(i, 0L);
      }
      CUdeviceptr p = new CUdeviceptr();
      long[] mem = device.memInfo();
      int r = cuMemAlloc(p, bytes);
      if (r != 0) {
        throw new CudaException("cuMemAlloc(" + CudaExecutor.mib(bytes) + " for " + what + ") on " + device.name
            + " (device " + device.ordinal + ", " + CudaExecutor.mib(mem[0]) + " free) failed with code " + r
            + "; lower spark.volpool.gpu.streams or spark.volpool.batchSize, or run such volumes with"
            + " spark.volpool.device=cpu", r);
      }
      buffers.set(i, p);
      capacity.set(i, bytes);
    }
    return buffers.get(i);
  }

  /** The kernel runner of {@code plan} on this lane (launch parameters cached per buffers). */
  KernelRunner runner(KernelPlan plan) {
    KernelRunner r = runners.get(plan);
    if (r == null) {
      if (runnerOrder.size() >= RUNNERS) {
        KernelPlan old = runnerOrder.remove(0);
        runners.remove(old).close();
      }
      r = new KernelRunner(device, plan);
      runners.put(plan, r);
      runnerOrder.add(plan);
    }
    return r;
  }

  void close() {
    device.makeCurrent();
    Cuda.check(cuStreamSynchronize(stream), "cuStreamSynchronize(lane " + index + " before free)");
    for (KernelRunner r : runners.values()) {
      r.close();
    }
    runners.clear();
    for (CUdeviceptr p : buffers) {
      if (p != null) {
        Cuda.check(cuMemFree(p), "cuMemFree(lane " + index + ")");
      }
    }
    buffers.clear();
    for (CUevent e : events) {
      Cuda.check(cuEventDestroy(e), "cuEventDestroy");
    }
    Cuda.check(cuStreamDestroy(stream), "cuStreamDestroy(lane " + index + ")");
  }
}
