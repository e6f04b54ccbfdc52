package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/**
 * One GPU of this JVM: its retained primary context, the kernel module loaded once, the cached
 * kernel functions, and its {@link Lane}s: the streams (with their device buffers) that batches
 * borrow for their copies and kernels only, so reading and writing never hold the GPU. Owned by
 * {@link CudaBackend}; {@link #close()} frees the lanes, unloads the module and releases the context, once.
 */
final class CudaDevice implements AutoCloseable {
  static final String FATBIN = "/kernels/volpool.fatbin";

  final int ordinal;
  final String name;
  final int multiprocessors;
  final int streams;
  private final Semaphore lanePermits;
  private final ConcurrentLinkedQueue<Lane> freeLanes = new ConcurrentLinkedQueue<>();
  private final List<Lane> allLanes = new ArrayList<>();
  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final CUmodule module = new CUmodule();
  private final Map<String, CUfunction> functions = new HashMap<>();
  private boolean closed;

  CudaDevice(int ordinal, int streams) {
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
    Cuda.check(cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain(device " + ordinal + ")");
    makeCurrent();
    byte[] image = loadImage();
    Cuda.check(cuModuleLoadData(module, image), "cuModuleLoadData(" + FATBIN + " on " + name + ")");
    this.streams = Math.max(1, streams);
    this.lanePermits = new Semaphore(this.streams, true);
  }

  /**
   * A free lane of this device, waiting for one when {@code mayWait}; else null when all are busy.
   * The caller gives it back with {@link #releaseLane} once the lane's stream is idle.
   */
  Lane acquireLane(boolean mayWait) {
    if (mayWait) {
      lanePermits.acquireUninterruptibly();
    } else if (!lanePermits.tryAcquire()) {
      return null;
    }
    Lane l = freeLanes.poll();
    if (l == null) {
      try {
        synchronized (this) {
          if (closed) {
            throw new IllegalStateException("CUDA device " + ordinal + " already closed");
          }
          makeCurrent();
          l = new Lane(this, allLanes.size());
          allLanes.add(l);
        }
      } catch (RuntimeException e) {
        lanePermits.release();
        throw e;
      }
    }
    return l;
  }

  void releaseLane(Lane l) {
    freeLanes.add(l);
    lanePermits.release();
  }

  /**
   * The kernel image: the fatbin in the jar, or the file named by the system property
   * {@code volpool.fatbin} (kernel development: compare a variant without rebuilding the jar).
   */
  private static byte[] loadImage() {
    String override = System.getProperty("volpool.fatbin");
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
            + " scripts/build-kernels.sh and mvn package");
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
    for (Lane l : allLanes) {
      l.close();
    }
    allLanes.clear();
    Cuda.check(cuModuleUnload(module), "cuModuleUnload(device " + ordinal + ")");
    Cuda.check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease(device " + ordinal + ")");
  }
}
