package io.volpool.cuda;

import io.volpool.conf.VolpoolOptions;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuFuncSetAttribute;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import io.volpool.memory.BufferPool;
import io.volpool.memory.MemoryBudget;
import java.util.HashMap;
import java.util.Map;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUmodule;

/**
 * One GPU of this JVM: its retained primary context, the kernel module loaded once, the cached
 * kernel functions, and the pool of {@link DeviceSlot}s (device buffers, a stream and events per
 * batch) bounded by a share of the device's memory. Owned by {@link CudaBackend}; {@link #close()}
 * frees the slots, unloads the module and releases the context, once.
 */
final class CudaDevice implements AutoCloseable {
  static final String FATBIN = "/kernels/volpool.fatbin";

  final int ordinal;
  final String name;
  final int multiprocessors;
  /** The widest row pitch a 2D copy takes (CU_DEVICE_ATTRIBUTE_MAX_PITCH). */
  final long maxPitch;
  /** This device's memory for batches (a share of what was free when it was opened). */
  final MemoryBudget memory;
  /** Device buffers, streams and events of batches, reused by size; counted against {@link #memory}. */
  final BufferPool<DeviceSlot.Key, DeviceSlot> slots;
  /** Nanoseconds of this device's kernels, and of its kernels and output copies, as CUDA events timed them. */
  final java.util.concurrent.atomic.AtomicLong kernelNanos = new java.util.concurrent.atomic.AtomicLong();
  final java.util.concurrent.atomic.AtomicLong busyNanos = new java.util.concurrent.atomic.AtomicLong();
  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final CUmodule module = new CUmodule();
  private final Map<String, CUfunction> functions = new HashMap<>();
  private boolean closed;

  CudaDevice(int ordinal, double memoryFraction) {
    this.ordinal = ordinal;
    Cuda.check(cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
    byte[] nm = new byte[256];
    Cuda.check(cuDeviceGetName(nm, nm.length, device), "cuDeviceGetName(" + ordinal + ")");
    int len = 0;
    while (len < nm.length && nm[len] != 0) {
      len++;
    }
    this.name = new String(nm, 0, len, StandardCharsets.US_ASCII);
    int[] v = new int[1];
    Cuda.check(cuDeviceGetAttribute(v, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
        "cuDeviceGetAttribute(multiprocessor count)");
    this.multiprocessors = v[0];
    Cuda.check(cuDeviceGetAttribute(v, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_PITCH, device),
        "cuDeviceGetAttribute(max pitch)");
    this.maxPitch = v[0] & 0xffffffffL;
    Cuda.check(cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain(device " + ordinal + ")");
    makeCurrent();
    byte[] image = loadImage();
    Cuda.check(cuModuleLoadData(module, image), "cuModuleLoadData(" + FATBIN + " on " + name + ")");
    long free = memInfo()[0];
    this.memory = new MemoryBudget(Math.max(64L << 20, (long) (free * memoryFraction)), VolpoolOptions.GPU_MEMORY_FRACTION.key(),
        "GPU memory of cuda:" + ordinal + " (" + name + ")");
    this.slots = new BufferPool<>(memory, new BufferPool.Allocator<>() {
      @Override
      public long bytes(DeviceSlot.Key key) {
        return key.bytes();
      }

      @Override
      public DeviceSlot allocate(DeviceSlot.Key key) {
        return new DeviceSlot(CudaDevice.this, key);
      }

      @Override
      public void free(DeviceSlot slot) {
        slot.close();
      }
    });
  }

  /**
   * The kernel image: the fatbin in the jar, or the file named by the system property
   * {@code volpool.fatbin} (kernel development: compare a variant without rebuilding the jar).
   */
  private static byte[] loadImage() {
    String override = io.volpool.conf.InternalProperties.FATBIN.value();
    if (override != null) {
      try {
        return java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(override));
      } catch (IOException e) {
        throw new UncheckedIOException("reading kernel image " + override + " (-Dvolpool.fatbin)", e);
      }
    }
    try (InputStream in = CudaDevice.class.getResourceAsStream(FATBIN)) {
      if (in == null) {
        throw new IllegalStateException("kernel image " + FATBIN + " is missing from the classpath; rebuild with"
            + " scripts/device/build-kernels.sh and mvn package");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + FATBIN, e);
    }
  }

  /** Makes this device's primary context current on the calling thread (Spark reuses task threads). */
  void makeCurrent() {
    Cuda.check(cuCtxSetCurrent(context), "cuCtxSetCurrent(device " + ordinal + ")");
  }

  synchronized CUfunction function(String kernel) {
    return functions.computeIfAbsent(kernel, k -> {
      CUfunction f = new CUfunction();
      Cuda.check(cuModuleGetFunction(f, module, k), "cuModuleGetFunction(" + k + ")");
      return f;
    });
  }

  /** The dynamic shared memory each kernel has opted in to, in bytes (a function's attribute, per context). */
  private final Map<String, Integer> smemAllowed = new HashMap<>();

  /**
   * Lets {@code kernel} use {@code bytes} of dynamic shared memory (above 48 KiB a kernel must opt in):
   * once per kernel and size on this device, not once per prepared launch (sixteen first tasks each
   * setting it waited on one another in the driver).
   */
  synchronized void allowDynamicSmem(String kernel, int bytes) {
    if (smemAllowed.getOrDefault(kernel, 0) >= bytes) {
      return;
    }
    makeCurrent();
    Cuda.check(cuFuncSetAttribute(function(kernel), CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        bytes), "cuFuncSetAttribute(" + kernel + ", max dynamic shared memory " + bytes + ")");
    smemAllowed.put(kernel, bytes);
  }

  /** Free and total device memory in bytes. */
  long[] memInfo() {
    makeCurrent();
    long[] free = new long[1];
    long[] total = new long[1];
    Cuda.check(cuMemGetInfo(free, total), "cuMemGetInfo(device " + ordinal + ")");
    return new long[] {free[0], total[0]};
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    makeCurrent();
    slots.close();
    Cuda.check(cuModuleUnload(module), "cuModuleUnload(device " + ordinal + ")");
    Cuda.check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease(device " + ordinal + ")");
  }
}
