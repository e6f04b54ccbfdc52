package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuInit;

import io.volpool.backend.Backend;
import io.volpool.backend.BatchExecutor;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import java.util.HashMap;
import java.util.Map;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import org.apache.spark.TaskContext;
import org.apache.spark.resource.ResourceInformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GPU backend: one per executor JVM, owning one {@link CudaDevice} per GPU it has been asked
 * to use. A task's GPU comes from its Spark resources ({@code gpu}), mapped through
 * CUDA_VISIBLE_DEVICES; device 0 when Spark assigned none (local mode). {@link #close()} releases
 * every device; executors still open must be closed first by their owners.
 */
public final class CudaBackend implements Backend {
  private static final Logger LOG = LoggerFactory.getLogger(CudaBackend.class);
  /** The oldest driver API version whose driver runs our kernels (built by nvcc 13). */
  public static final int MIN_DRIVER_VERSION = 13000;
  /**
   * Bytes of pinned host memory one slot may take when the batch size is chosen automatically:
   * small enough that a partition spans several batches, so decoding, copies and kernels overlap.
   */
  static final long AUTO_PINNED_PER_SLOT = 64L << 20;
  /** Share of the free device memory that automatic batching uses (the rest is headroom). */
  static final double AUTO_DEVICE_SHARE = 0.6;

  private final int deviceCount;
  private final int driverVersion;
  private final int tasksPerDevice;
  private final boolean poison = Boolean.getBoolean("volpool.cuda.poison");
  private final Map<Integer, CudaDevice> devices = new HashMap<>();
  private boolean closed;

  private CudaBackend(int deviceCount, int driverVersion, int tasksPerDevice) {
    this.deviceCount = deviceCount;
    this.driverVersion = driverVersion;
    this.tasksPerDevice = tasksPerDevice;
  }

  /**
   * Initialises CUDA and checks that a device and a recent enough driver exist.
   *
   * @throws CudaUnavailableException saying why there is no usable GPU
   */
  public static CudaBackend create(int tasksPerDevice) throws CudaUnavailableException {
    String os = System.getProperty("os.name", "") + "/" + System.getProperty("os.arch", "");
    if (!os.startsWith("Linux/") || !(os.endsWith("amd64") || os.endsWith("x86_64"))) {
      throw new CudaUnavailableException("volpool ships JCuda natives for linux-x86_64 only, this JVM runs on " + os);
    }
    int[] v = new int[1];
    try {
      JCudaDriver.setExceptionsEnabled(false);
      int r = cuInit(0);
      if (r != CUresult.CUDA_SUCCESS) {
        throw new CudaUnavailableException("cuInit failed with " + CUresult.stringFor(r)
            + (r == CUresult.CUDA_ERROR_NO_DEVICE ? " (no CUDA device visible to this process)" : ""));
      }
      Cuda.check(cuDriverGetVersion(v), "cuDriverGetVersion");
    } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
      String m = String.valueOf(e.getMessage());
      String why = m.contains("libcuda.so") ? "the NVIDIA driver library libcuda.so.1 is not installed or not on the"
          + " library path" : "JCuda's native library could not be loaded: " + m.lines().findFirst().orElse(m);
      throw new CudaUnavailableException(why, e);
    }
    if (v[0] < MIN_DRIVER_VERSION) {
      throw new CudaUnavailableException("the NVIDIA driver supports CUDA " + v[0] / 1000 + "." + (v[0] % 1000) / 10
          + " but volpool's kernels need CUDA 13.0 (driver 580 or newer); upgrade the driver");
    }
    int[] n = new int[1];
    Cuda.check(cuDeviceGetCount(n), "cuDeviceGetCount");
    if (n[0] < 1) {
      throw new CudaUnavailableException("CUDA reports no devices");
    }
    return new CudaBackend(n[0], v[0], tasksPerDevice);
  }

  /** The device this thread's task was assigned (device 0 outside a task or without a Spark GPU resource). */
  synchronized CudaDevice deviceForTask() {
    if (closed) {
      throw new IllegalStateException("CUDA backend already closed");
    }
    String address = null;
    TaskContext tc = TaskContext.get();
    if (tc != null) {
      ResourceInformation gpu = tc.resources().get("gpu").getOrElse(() -> null);
      if (gpu != null && gpu.addresses().length > 0) {
        address = gpu.addresses()[0];
      }
    }
    int ord = DeviceAssignment.ordinal(address, System.getenv("CUDA_VISIBLE_DEVICES"), deviceCount);
    return devices.computeIfAbsent(ord, o -> {
      CudaDevice d = new CudaDevice(o, tasksPerDevice);
      LOG.info("volpool: CUDA device {} ({}, {} SMs), driver API {}, up to {} concurrent task(s)", o, d.name,
          d.multiprocessors, driverVersion, tasksPerDevice);
      return d;
    });
  }

  @Override
  public String name() {
    CudaDevice d = deviceForTask();
    return "cuda:" + d.ordinal + " " + d.name;
  }

  /** Per-volume bytes that one slot needs on the device (input, used intermediates, output). */
  static long deviceBytesPerVolume(KernelPlan plan) {
    long b = 0;
    for (int i = 0; i < plan.shapes().size(); i++) {
      if (plan.used(i)) {
        b += plan.shapes().get(i).bytes();
      }
    }
    return b;
  }

  /** Per-volume bytes of pinned host memory one slot needs (input and output). */
  static long pinnedBytesPerVolume(KernelPlan plan) {
    return plan.shapes().get(0).bytes() + plan.shapes().get(plan.outputBuffer()).bytes();
  }

  @Override
  public int suggestBatch(Pipeline pipeline, VolumeShape input) {
    KernelPlan plan = KernelPlan.of(pipeline, input);
    long free = deviceForTask().memInfo()[0];
    long perTask = (long) (free * AUTO_DEVICE_SHARE / Math.max(1, tasksPerDevice));
    long byDevice = perTask / (CudaExecutor.SLOTS * deviceBytesPerVolume(plan));
    long byPinned = AUTO_PINNED_PER_SLOT / pinnedBytesPerVolume(plan);
    return (int) Math.max(1, Math.min(1024, Math.min(byDevice, byPinned)));
  }

  @Override
  public BatchExecutor open(Pipeline pipeline, VolumeShape input, int maxBatch) {
    KernelPlan plan = KernelPlan.of(pipeline, input);
    CudaDevice d = deviceForTask();
    long perVolume = deviceBytesPerVolume(plan);
    long hostLimit = Integer.MAX_VALUE / Math.max(plan.shapes().get(0).bytes(), plan.shapes().get(plan.outputBuffer()).bytes());
    if (hostLimit < 1) {
      throw new IllegalArgumentException("volume " + input + " is " + plan.shapes().get(0).bytes()
          + " bytes; the GPU backend takes volumes under 2 GiB");
    }
    // grid z carries the batch in the fast kernels
    int batch = (int) Math.max(1, Math.min(Math.min(maxBatch, hostLimit), KernelPlan.MAX_GRID_YZ));
    long free = d.memInfo()[0];
    long need = CudaExecutor.SLOTS * perVolume * batch;
    if (need > free) {
      long one = CudaExecutor.SLOTS * perVolume;
      if (one > free) {
        throw new IllegalArgumentException("volume " + input + " through " + pipeline.describe() + " needs "
            + CudaExecutor.mib(one) + " of GPU memory (input, intermediates and output, two slots) but "
            + d.name + " (device " + d.ordinal + ") has " + CudaExecutor.mib(free) + " free; use fewer concurrent tasks"
            + " (spark.volpool.gpu.tasksPerDevice) or spark.volpool.device=cpu for such volumes");
      }
      int fit = (int) Math.max(1, free / one);
      LOG.warn("batch of {} volumes {} needs {} of GPU memory, {} free: using batches of {}", batch, input,
          CudaExecutor.mib(need), CudaExecutor.mib(free), fit);
      batch = Math.min(batch, fit);
    }
    LOG.debug("CUDA plan for {} on {}: {}", pipeline.describe(), input, plan.describe());
    return new CudaExecutor(d, plan, batch, poison);
  }

  /** A kernel runner for {@code plan} on the current task's device; the caller closes it. */
  public KernelRunner runner(KernelPlan plan) {
    CudaDevice d = deviceForTask();
    d.makeCurrent();
    return new KernelRunner(d, plan);
  }

  /** Makes the task's device current on this thread (for callers using raw driver calls, e.g. benchmarks). */
  public void makeCurrent() {
    deviceForTask().makeCurrent();
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (CudaDevice d : devices.values()) {
      d.close();
    }
    devices.clear();
  }
}
