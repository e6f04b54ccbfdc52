package io.volpool.cuda;

import io.volpool.conf.VolpoolOptions;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;

import io.volpool.backend.Backend;
import io.volpool.backend.BatchExecutor;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSink;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.SlabRun;
import io.volpool.backend.VolumePlan;
import io.volpool.format.ValueType;
import io.volpool.memory.Arena;
import io.volpool.memory.BufferPool;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.Pipeline;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import jcuda.Pointer;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GPU backend: one per executor JVM, owning one {@link CudaDevice} per GPU it is asked to use
 * and the pool of pinned host buffers that batches of every device share (portable pinned memory,
 * counted against the memory budget). The caller names the device of each executor; this class
 * never looks at Spark. {@link #close()} releases every device and the pool; executors still open
 * must be closed first by their owners.
 */
public final class CudaBackend implements Backend {
  private static final Logger LOG = LoggerFactory.getLogger(CudaBackend.class);
  /** The oldest driver API version whose driver runs our kernels (built by nvcc 13). */
  public static final int MIN_DRIVER_VERSION = 13000;
  /**
   * Bytes of pinned host memory one batch may take when the batch size is chosen automatically:
   * small enough that a partition spans several batches, so reading, copies and kernels overlap. 16 MiB
   * (85 reference volumes) rather than 64 (341): on the H200, 65,536 reference volumes through fused then
   * avgpool3d ran 2-17% faster over the job in five alternated pairs, the first commit 0.4-0.6 s sooner, with
   * half the task-seconds allocating pinned and device memory in the first wave (docs/benchmarks.md).
   */
  static final long AUTO_PINNED_PER_BATCH = 16L << 20;
  /** Automatic batches leave room for this many batches in flight on one device. */
  static final int AUTO_BATCHES_PER_DEVICE = 32;

  private final int deviceCount;
  private final int driverVersion;
  private final double memoryFraction;
  private final MemoryBudget budget;
  private final boolean poison = io.volpool.conf.InternalProperties.CUDA_POISON.flag();
  /**
   * Whether batches of 8- and 16-bit volumes go to the device at their stored width and are widened
   * there (the default since StoredInputTest and the job's dtype tests passed on the H200,
   * docs/gpu-testing.md); {@code -Dvolpool.cuda.widenOnDevice=false} has the readers widen on the host,
   * as before (a way back, and the baseline of the dtype benchmark).
   */
  private final boolean widenOnDevice = io.volpool.conf.InternalProperties.CUDA_WIDEN_ON_DEVICE.flag();
  private final Map<Integer, CudaDevice> devices = new HashMap<>();
  private final BufferPool<PinnedKey, PinnedBlock> pinned;
  private boolean closed;

  /**
   * One pinned host allocation and a little-endian view of it: its own ({@code pool} null) or a
   * block of a chunk of the pinned pool at {@code poolOffset}.
   */
  record PinnedBlock(Pointer pointer, ByteBuffer buffer, CudaDevice owner, PinnedChunk pool, long poolOffset) {}

  /** A chunk of the pinned pool {@link #warm} allocated: one portable allocation that blocks are carved from. */
  record PinnedChunk(Pointer base, CudaDevice owner, Arena arena, long bytes) {}

  /**
   * Bytes of one chunk of the pinned pool. A pool is several allocations: JCuda views a host
   * allocation as one ByteBuffer, whose capacity is an int (a 2 GiB one came back with capacity 0 on
   * the H200 and every block carved from it failed); and the driver serializes pinning, so while one
   * chunk is pinned the tasks' own CUDA calls wait: 1 GiB chunks (about 0.5 s each on the H200) held
   * the first tasks back longer than the pool saved them. A chunk of 128 MiB takes tens of
   * milliseconds, and tasks carve their blocks from each chunk as soon as it exists.
   */
  static final long POOL_CHUNK = VolpoolOptions.GPU_PINNED_POOL_CHUNK;

  private final AtomicBoolean poolClaimed = new AtomicBoolean();

  /** The chunks of the pinned pool; empty without one. */
  private volatile List<PinnedChunk> pool = List.of();
  /** Pinned blocks allocated so far: carved from the pool, and allocated on their own. */
  private final java.util.concurrent.atomic.AtomicLong poolBlocks = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong ownBlocks = new java.util.concurrent.atomic.AtomicLong();

  /** Pinned blocks are allocated and freed in the context of the device whose batches use them. */
  record PinnedKey(int device, long bytes) {}

  private CudaBackend(int deviceCount, int driverVersion, double memoryFraction, MemoryBudget budget) {
    this.deviceCount = deviceCount;
    this.driverVersion = driverVersion;
    this.memoryFraction = memoryFraction;
    this.budget = budget;
    this.pinned = new BufferPool<>(budget, new BufferPool.Allocator<>() {
      @Override
      public long bytes(PinnedKey key) {
        return key.bytes();
      }

      @Override
      public PinnedBlock allocate(PinnedKey key) {
        long bytes = key.bytes();
        for (PinnedChunk c : pool) {
          long at = c.arena().take(bytes);
          if (at >= 0) {
            poolBlocks.incrementAndGet();
            return new PinnedBlock(c.base().withByteOffset(at), c.base().getByteBuffer(at, bytes)
                .order(ByteOrder.LITTLE_ENDIAN), c.owner(), c, at);
          }
        }
        CudaDevice d = device(key.device());
        d.makeCurrent();
        Pointer p = new Pointer();
        Cuda.check(cuMemHostAlloc(p, bytes, JCudaDriver.CU_MEMHOSTALLOC_PORTABLE),
            "cuMemHostAlloc(" + CudaExecutor.mib(bytes) + " pinned)");
        ownBlocks.incrementAndGet();
        pinnedAllocated(bytes);
        return new PinnedBlock(p, p.getByteBuffer(0, bytes).order(ByteOrder.LITTLE_ENDIAN), d, null, -1);
      }

      @Override
      public void free(PinnedBlock b) {
        if (b.pool() != null) {
          b.pool().arena().give(b.poolOffset());
          return;
        }
        b.owner().makeCurrent();
        Cuda.check(cuMemFreeHost(b.pointer()), "cuMemFreeHost(pinned)");
        pinnedAllocated(-b.buffer().capacity());
      }
    });
  }

  /** Host memory pinned now (pool chunks and blocks of their own), and its peak. */
  private final java.util.concurrent.atomic.AtomicLong pinnedBytes = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong pinnedPeak = new java.util.concurrent.atomic.AtomicLong();

  private void pinnedAllocated(long bytes) {
    long now = pinnedBytes.addAndGet(bytes);
    pinnedPeak.accumulateAndGet(now, Math::max);
  }

  @Override
  public java.util.Map<String, Long> metrics() {
    long kernels = 0;
    long busy = 0;
    long used = 0;
    long peak = 0;
    long limit = 0;
    long driver = 0;
    java.util.List<CudaDevice> open;
    synchronized (this) {
      if (closed) {
        return java.util.Map.of();
      }
      open = new ArrayList<>(devices.values());
    }
    for (CudaDevice d : open) {
      kernels += d.kernelNanos.get();
      busy += d.busyNanos.get();
      used += d.memory.used();
      peak += d.memory.peak();
      limit += d.memory.limit();
      try {
        d.makeCurrent();
        long[] info = d.memInfo();
        driver += info[1] - info[0];
      } catch (RuntimeException e) {
        // a device closing meanwhile: its driver figure is left out of this reading
      }
    }
    java.util.Map<String, Long> m = new java.util.LinkedHashMap<>();
    m.put("gpuKernelNanos", kernels);
    m.put("gpuBusyNanos", busy);
    m.put("gpuDeviceBytesInUse", used);
    m.put("gpuDeviceBytesPeak", peak);
    m.put("gpuDeviceBytesLimit", limit);
    m.put("gpuDriverBytesUsed", driver);
    m.put("pinnedBytesAllocated", pinnedBytes.get());
    m.put("pinnedBytesPeak", pinnedPeak.get());
    return m;
  }

  /**
   * Initialises CUDA and checks that a device and a recent enough driver exist.
   *
   * @param memoryFraction share of each device's free memory that batches may take
   * @throws CudaUnavailableException saying why there is no usable GPU
   */
  public static synchronized CudaBackend create(double memoryFraction, MemoryBudget budget)
      throws CudaUnavailableException {
    CudaUnavailableException before = unavailable;
    if (before != null) {
      // CUDA cannot come back in this JVM (a failed class initialiser, a failed cuInit): the first reason, every time
      throw new CudaUnavailableException(before.getMessage(), before);
    }
    try {
      return probe(memoryFraction, budget);
    } catch (CudaUnavailableException e) {
      unavailable = e;
      throw e;
    } finally {
      probed = true;
    }
  }

  private static volatile boolean probed;

  /**
   * Whether this JVM has looked for CUDA once (JCuda loaded, {@code cuInit} returned), whatever it
   * found: a later {@link #create} then answers at once, or after the driver's own checks.
   */
  public static boolean probed() {
    return probed;
  }

  /** The first reason this JVM found no usable GPU; later tries fail with it instead of a bare NoClassDefFoundError. */
  private static volatile CudaUnavailableException unavailable;

  private static CudaBackend probe(double memoryFraction, MemoryBudget budget) throws CudaUnavailableException {
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
    } catch (LinkageError e) {
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
    return new CudaBackend(n[0], v[0], memoryFraction, budget);
  }

  /** A backend with a budget of its own (tests and tools). */
  public static CudaBackend create(double memoryFraction) throws CudaUnavailableException {
    return create(memoryFraction, new MemoryBudget(MemoryBudget.defaultLimit()));
  }

  /** CUDA device {@code ordinal} of this process, opened on first use. */
  synchronized CudaDevice device(int ordinal) {
    if (closed) {
      throw new IllegalStateException("CUDA backend already closed");
    }
    if (ordinal < 0 || ordinal >= deviceCount) {
      throw new IllegalArgumentException("CUDA device " + ordinal + " does not exist: this process sees " + deviceCount
          + " device(s)");
    }
    return devices.computeIfAbsent(ordinal, o -> {
      CudaDevice d = new CudaDevice(o, memoryFraction);
      LOG.info("volpool: CUDA device {} ({}, {} SMs), driver API {}, {} of device memory for batches", o, d.name,
          d.multiprocessors, driverVersion, CudaExecutor.mib(d.memory.limit()));
      return d;
    });
  }

  @Override
  public int deviceCount() {
    return deviceCount;
  }

  @Override
  public String name(int device) {
    CudaDevice d = device(device);
    return "cuda:" + d.ordinal + " " + d.name;
  }


  /** Largest output, gap included, one batch of whole volumes holds (a ByteBuffer's reach, less staging). */
  static final long MAX_BATCH_OUTPUT = Integer.MAX_VALUE - (64L << 20);

  @Override
  public VolumePlan plan(Pipeline pipeline, VolumeShape input, int batchSize, long volumesAtMost, int device,
      int outputGap, MemoryBudget budget) {
    KernelPlan plan = KernelPlan.of(pipeline, input);
    CudaDevice d = device(device);
    long perVolume = plan.deviceBytesPerVolume();
    long outPerVolume = outputGap + plan.shapes().get(plan.outputBuffer()).bytes();
    long pinnedOne = CudaExecutor.pinnedBytes(plan, 1, outputGap);
    if (perVolume > d.memory.maxRequest() || outPerVolume > MAX_BATCH_OUTPUT || pinnedOne > budget.maxRequest()) {
      SlabPlan sp = new SlabPlan(pipeline, input);
      int planes = slabPlanes(sp, budget.maxRequest(), device);
      if (planes < 1) {
        long host = slabBytes(sp, 1);
        long dev = slabDeviceBytes(sp, 1);
        throw new io.volpool.memory.MemoryBudgetException("one output plane through " + pipeline.describe()
            + " needs " + CudaExecutor.mib(host) + " of host buffers (the budget allows "
            + CudaExecutor.mib(budget.maxRequest()) + " per request; raise " + MemoryBudget.SETTING + ") and "
            + CudaExecutor.mib(dev) + " on " + d.name + " (its share allows " + CudaExecutor.mib(d.memory.maxRequest())
            + "; raise " + VolpoolOptions.GPU_MEMORY_FRACTION.key() + ")", host, budget.limit());
      }
      return VolumePlan.slabs(planes, "one volume needs " + CudaExecutor.mib(perVolume) + " on the GPU (a batch may"
          + " take " + CudaExecutor.mib(d.memory.maxRequest()) + "), " + CudaExecutor.mib(outPerVolume) + " of output and "
          + CudaExecutor.mib(pinnedOne) + " of pinned memory (one request of the budget: "
          + CudaExecutor.mib(budget.maxRequest()) + "): slabs of " + planes + " output planes");
    }
    // grid z carries the batch in the fast kernels; one batch may take half of the device's share
    long fit = Math.min(Math.min(d.memory.maxRequest() / perVolume, MAX_BATCH_OUTPUT / outPerVolume),
        KernelPlan.MAX_GRID_YZ);
    if (batchSize > 0) {
      if (batchSize > fit) {
        LOG.warn("batch of {} volumes {} does not fit the GPU's share for one batch ({}): using batches of {}", batchSize,
            input, CudaExecutor.mib(d.memory.maxRequest()), fit);
      }
      return VolumePlan.whole((int) Math.min(batchSize, fit), "batch size set to " + batchSize);
    }
    long byDevice = d.memory.limit() / AUTO_BATCHES_PER_DEVICE / perVolume;
    long byInput = AUTO_PINNED_PER_BATCH / plan.shapes().get(0).bytes();
    long byOutput = Math.min(AUTO_PINNED_PER_BATCH, budget.maxRequest() / 2) / plan.shapes().get(plan.outputBuffer()).bytes();
    long n = Math.max(1, Math.min(Math.min(1024, fit), Math.min(byDevice, Math.min(byInput, byOutput))));
    if (volumesAtMost > 0 && volumesAtMost < n) {
      // a task of fewer volumes: a batch of all of them, no pinned room it would never fill
      return VolumePlan.whole((int) volumesAtMost, "all " + volumesAtMost + " volumes of the task in one batch");
    }
    while (n > 1 && CudaExecutor.pinnedBytes(plan, (int) n, outputGap) > budget.maxRequest()) {
      n = Math.max(1, n / 2);
    }
    return VolumePlan.whole((int) n, "about " + CudaExecutor.mib(AUTO_PINNED_PER_BATCH) + " of pinned input per batch,"
        + " room for " + AUTO_BATCHES_PER_DEVICE + " batches on the device");
  }

  @Override
  public BatchExecutor open(Pipeline pipeline, VolumeShape input, ValueType stored, int maxBatch, int device,
      int outputGap) {
    KernelPlan plan = KernelPlan.of(pipeline, input);
    CudaDevice d = device(device);
    long perVolume = plan.deviceBytesPerVolume();
    long outPerVolume = outputGap + plan.shapes().get(plan.outputBuffer()).bytes();
    if (maxBatch < 1 || maxBatch * outPerVolume > MAX_BATCH_OUTPUT || maxBatch > KernelPlan.MAX_GRID_YZ) {
      throw new IllegalArgumentException("a GPU batch of " + maxBatch + " volumes " + input + " gives "
          + CudaExecutor.mib(maxBatch * outPerVolume) + " of output; one batch holds under 2 GiB (plan() runs larger"
          + " volumes in slabs)");
    }
    if (maxBatch * perVolume > d.memory.maxRequest()) {
      throw new IllegalArgumentException("a GPU batch of " + maxBatch + " volumes " + input + " through "
          + pipeline.describe() + " needs " + CudaExecutor.mib(maxBatch * perVolume) + " of GPU memory (input,"
          + " intermediates and output) but batches on " + d.name + " (device " + d.ordinal + ") may take at most "
          + CudaExecutor.mib(d.memory.maxRequest()) + " each (half of " + VolpoolOptions.GPU_MEMORY_FRACTION.key()
          + " of its free memory); plan() runs such volumes in slabs");
    }
    KernelPlan run = onDevice(plan, stored, maxBatch, d);
    LOG.debug("CUDA plan for {} on {} {}: {}", pipeline.describe(), input, run.stored(), run.describe());
    return new CudaExecutor(d, run, maxBatch, outputGap, pinned, poison);
  }

  /**
   * The one place that decides where a batch's values are widened: 8- and 16-bit values go to the
   * device at their stored width and are widened there (half or a quarter of the bytes over the
   * host's memory and the bus), in the first kernel's loads where it can ({@link KernelPlan#of(
   * io.volpool.op.Pipeline, io.volpool.op.VolumeShape, ValueType)}), when their buffers still fit the
   * batch's share of the device; other types (int32, float64, big-endian float32) are widened by the
   * readers, as they gain nothing. Returns the plan the batches run.
   */
  private KernelPlan onDevice(KernelPlan plan, ValueType stored, int maxBatch, CudaDevice d) {
    if (stored.isFloat32() || stored.itemSize() > 2 || !widenOnDevice) {
      return plan;
    }
    KernelPlan typed = KernelPlan.of(plan.pipeline(), plan.shapes().get(0), stored);
    return maxBatch * typed.deviceBytesPerVolume() <= d.memory.maxRequest() ? typed : plan;
  }

  @Override
  public String makeBatchesAhead(Pipeline pipeline, VolumeShape input, ValueType stored, int batchSize,
      long volumesAtMost, int device, int outputGap, MemoryBudget budget, int batches) {
    long t0 = System.nanoTime();
    VolumePlan vp = plan(pipeline, input, batchSize, volumesAtMost, device, outputGap, budget);
    if (vp.slabbed()) {
      return "volumes " + input + " run in slabs: no batches made ahead";
    }
    List<io.volpool.backend.Batch> made = new ArrayList<>();
    try (BatchExecutor e = open(pipeline, input, stored, vp.batch(), device, outputGap)) {
      try {
        while (made.size() < batches) {
          io.volpool.backend.Batch b = e.newBatch(false);
          if (b == null) {
            break; // the budget has no room now: the tasks allocate the rest themselves
          }
          made.add(b);
        }
      } finally {
        for (io.volpool.backend.Batch b : made) {
          b.close();
        }
      }
    }
    return made.size() + " of " + batches + " batch(es) of " + vp.batch() + " volumes " + input + " made ahead on "
        + name(device) + " in " + (System.nanoTime() - t0) / 1_000_000 + " ms";
  }

  /** Device bytes a slab run of {@code planes} output planes holds: every used buffer's window. */
  static long slabDeviceBytes(SlabPlan sp, int planes) {
    long b = 0;
    for (long x : CudaSlabRun.deviceSizes(KernelPlan.of(sp.pipeline(), sp.input()), sp, planes)) {
      b += x;
    }
    return b;
  }

  @Override
  public long slabBytes(SlabPlan plan, int planes) {
    return CudaSlabRun.hostBytes(plan, planes);
  }

  /**
   * Host buffers one slab run aims at (its two input windows and two output slabs): slabs of a few
   * tens of MiB keep a run's reads, copies, kernels and writes overlapping, and the pinned memory
   * that the first tasks of a job allocate at once small. On the H100 machine (2026-12-06), ranges of
   * a 32 GiB volume whose slabs filled the budget's share (1.16 GiB each, one slab a task) spent a
   * third of their task time allocating pinned memory, and each task read, computed and wrote in turn.
   * {@code -Dvolpool.cuda.slabRunBytes} sets another aim (benchmarks: the largest slabs, as before).
   */
  static final long SLAB_RUN_TARGET = io.volpool.conf.InternalProperties.CUDA_SLAB_RUN_BYTES.longValue();

  @Override
  public int slabPlanes(SlabPlan plan, long hostBytes, int device) {
    long dev = device(device).memory.maxRequest();
    // the pinned block is one ByteBuffer: under 2 GiB
    long host = Math.min(hostBytes, Integer.MAX_VALUE - 8);
    int aimed = plan.mostPlanes(t -> slabBytes(plan, t) <= Math.min(host, SLAB_RUN_TARGET)
        && slabDeviceBytes(plan, t) <= dev);
    return aimed >= 1 ? aimed : plan.mostPlanes(t -> slabBytes(plan, t) <= host && slabDeviceBytes(plan, t) <= dev);
  }

  @Override
  public SlabRun startSlabs(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times, int device,
      int from, int to) {
    int threads = SLAB_READ_THREADS > 0 ? SLAB_READ_THREADS
        : slabReadThreads(budget.limit(), slabBytes(plan, planes), Runtime.getRuntime().availableProcessors());
    return new CudaSlabRun(device(device), plan, planes, src, dst, times, pinned, slabReader, threads, poison, from, to);
  }

  /**
   * Threads that read one slab run's next planes: the host's cores shared among the slab runs the
   * memory budget admits at once (each holds {@code runBytes}), 4 to 16. A small budget admits few
   * runs, each then reading with more threads: one thread reads a local file into pinned memory at
   * about 3.6 GB/s on the H200 machine, and a run's slabs wait for their planes.
   */
  static int slabReadThreads(long budgetBytes, long runBytes, int cores) {
    long runs = Math.max(1, Math.min(cores, budgetBytes / Math.max(1, runBytes)));
    return (int) Math.max(4, Math.min(16, cores / runs));
  }

  /** {@code -Dvolpool.cuda.slabReadThreads}: read threads of every slab run (benchmarks), else 0: {@link #slabReadThreads}. */
  static final int SLAB_READ_THREADS = (int) io.volpool.conf.InternalProperties.CUDA_SLAB_READ_THREADS.longValue();

  /** Reads the next slab of slabbed runs while the GPU works on the current one. */
  private final java.util.concurrent.ExecutorService slabReader = java.util.concurrent.Executors.newCachedThreadPool(r -> {
    Thread th = new Thread(r, "volpool-gpu-slab-reader");
    th.setDaemon(true);
    return th;
  });

  /**
   * Opens {@code devices} (primary context, kernel module) and, the first time with
   * {@code pinnedPoolBytes} > 0, allocates the pinned pool that later blocks are carved from (a
   * block that does not fit it is allocated on its own, as without a pool).
   */
  @Override
  public String warm(List<Integer> devices, long pinnedPoolBytes) {
    long t0 = System.nanoTime();
    List<String> names = new ArrayList<>();
    for (int o : devices) {
      names.add(name(o));
    }
    long t1 = System.nanoTime();
    String what = "CUDA device(s) " + names + " opened (context, kernels) in " + (t1 - t0) / 1_000_000 + " ms";
    if (pinnedPoolBytes > 0 && poolClaimed.compareAndSet(false, true)) {
      // chunk by chunk, each usable as soon as it is allocated: tasks that come meanwhile do not wait
      // for the whole pool (2 GiB take about 0.7 s on the H200), they allocate their own blocks
      CudaDevice d = device(devices.isEmpty() ? 0 : devices.get(0));
      d.makeCurrent();
      int n = 0;
      for (long size : poolChunks(pinnedPoolBytes)) {
        Pointer p = new Pointer();
        Cuda.check(cuMemHostAlloc(p, size, JCudaDriver.CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc(" + CudaExecutor.mib(size)
            + " of the " + CudaExecutor.mib(pinnedPoolBytes) + " pinned pool, " + n + " allocation(s) made and kept; "
            + VolpoolOptions.GPU_PINNED_POOL.key() + ": lower it if the host has less free memory)");
        synchronized (this) {
          if (closed) {
            cuMemFreeHost(p);
            break;
          }
          List<PinnedChunk> more = new ArrayList<>(pool);
          more.add(new PinnedChunk(p, d, new Arena(size, 4096), size));
          pool = List.copyOf(more);
          pinnedAllocated(size);
        }
        n++;
      }
      what += ", pinned pool of " + CudaExecutor.mib(pinnedPoolBytes) + " (" + n + " allocation(s)) in "
          + (System.nanoTime() - t1) / 1_000_000 + " ms";
    }
    return what;
  }

  /** The sizes of the allocations of a pinned pool of {@code bytes}: chunks of {@link #POOL_CHUNK} and the rest. */
  static List<Long> poolChunks(long bytes) {
    List<Long> sizes = new ArrayList<>();
    for (long left = bytes; left > 0; left -= POOL_CHUNK) {
      sizes.add(Math.min(left, POOL_CHUNK));
    }
    return sizes;
  }

  /** Pinned blocks allocated so far: {carved from the pool, allocated on their own}. */
  public long[] pinnedBlocks() {
    return new long[] {poolBlocks.get(), ownBlocks.get()};
  }

  @Override
  public int deviceFor(String gpuAddress) {
    return DeviceAssignment.ordinal(gpuAddress, System.getenv("CUDA_VISIBLE_DEVICES"), deviceCount);
  }

  /** A kernel runner for {@code plan} on {@code device}, with that device current; the caller closes it (benchmarks). */
  public KernelRunner runner(KernelPlan plan, int device) {
    CudaDevice d = device(device);
    d.makeCurrent();
    return new KernelRunner(d, plan);
  }

  /** Makes {@code device} current on this thread (for callers using raw driver calls, e.g. benchmarks). */
  public void makeCurrent(int device) {
    device(device).makeCurrent();
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    slabReader.shutdownNow();
    pinned.close();
    closed = true;
    for (PinnedChunk c : pool) {
      if (c.arena().used() == 0) {
        // a chunk with blocks still out (a task running at shutdown) stays: the process is ending
        c.owner().makeCurrent();
        Cuda.check(cuMemFreeHost(c.base()), "cuMemFreeHost(pinned pool)");
        pinnedAllocated(-c.bytes());
      }
    }
    for (CudaDevice d : devices.values()) {
      d.close();
    }
    devices.clear();
  }
}
