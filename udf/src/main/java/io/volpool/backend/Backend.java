package io.volpool.backend;

import io.volpool.op.Pipeline;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;

/**
 * Runs pipelines over batches of volumes on one kind of hardware. One instance per executor JVM
 * (see {@link Backends}); it owns its native state and buffer pools and releases them on
 * {@link #close()}, which is safe to call twice. Thread-safe: Spark runs several tasks at once.
 * Devices are named by the caller (the Spark layer maps a task's resources to a device index);
 * the CPU backend ignores the index.
 */
public interface Backend extends AutoCloseable {
  /** A short human-readable name for logs and the run summary, e.g. {@code cpu (16 threads)} or {@code cuda:0 NVIDIA H200}. */
  String name(int device);

  /** How many devices this backend can run on (1 for the CPU). */
  int deviceCount();

  /**
   * The one place that decides how volumes of {@code input} run through {@code pipeline} here:
   * whole, in batches (of {@code batchSize} when the user set one, else of the backend's choosing,
   * within one request of {@code budget} and the device), or one at a time in slabs along D when one
   * volume would need more than a batch may hold (host budget, device memory, or one buffer).
   *
   * @param batchSize the user's batch size, or 0 for the backend's choice
   * @param volumesAtMost the most volumes the task will bring (0: unknown): a batch the backend
   *     chooses is never larger, so a small task does not allocate (and pin) room it never fills
   * @param outputGap bytes before each output volume (a Parquet value's length prefix)
   * @throws IllegalArgumentException when the pipeline cannot take this shape
   * @throws io.volpool.memory.MemoryBudgetException when not even a slab of one output plane fits
   */
  VolumePlan plan(Pipeline pipeline, VolumeShape input, int batchSize, long volumesAtMost, int device, int outputGap,
      io.volpool.memory.MemoryBudget budget);

  /**
   * Opens an executor for {@code pipeline} on volumes of shape {@code input} on {@code device}, with
   * batches of up to {@code maxBatch} volumes, as {@link #plan} chose. Each output volume is preceded
   * by {@code outputGap} bytes the caller may use (a Parquet value's length prefix). The caller owns
   * the executor.
   *
   * @throws IllegalArgumentException when the pipeline cannot take this shape, or the batch cannot fit
   */
  default BatchExecutor open(Pipeline pipeline, VolumeShape input, int maxBatch, int device, int outputGap) {
    return open(pipeline, input, io.volpool.format.ValueType.FLOAT32, maxBatch, device, outputGap);
  }

  /**
   * As above, for volumes stored as {@code stored}: the backend decides whether its batches take the
   * stored values and widen them ({@link BatchExecutor#stored()}) or take float32 from the readers.
   */
  BatchExecutor open(Pipeline pipeline, VolumeShape input, io.volpool.format.ValueType stored, int maxBatch, int device,
      int outputGap);

  /** Host bytes from the memory budget that a {@link SlabRun} of {@code planes} output planes holds. */
  long slabBytes(SlabPlan plan, int planes);

  /**
   * The most output planes per slab whose buffers fit {@code hostBytes} of the memory budget (and,
   * on a GPU, the device's share); 0 when not even one plane does.
   */
  int slabPlanes(SlabPlan plan, long hostBytes, int device);

  /**
   * Starts one volume through {@code plan} in slabs of {@code planes} output planes on {@code device},
   * reading {@code src} forward and handing each slab's output to {@code dst}; its buffers are taken
   * from the budget (waiting for room: call it holding no batch). The caller drives and closes it.
   */
  default SlabRun startSlabs(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times, int device) {
    return startSlabs(plan, planes, src, dst, times, device, 0, plan.output().d());
  }

  /**
   * As above, for output planes {@code [from, to)} only (a slab range of a volume spread over several
   * tasks): the run's slabs are the whole volume's slabs of {@code planes} planes that lie in the range,
   * so each output plane comes out bit for bit as in a run of the whole volume; {@code src} is read from
   * the range's first input plane on. Needs {@code from} and {@code to} (unless it is the volume's end) to
   * be multiples of {@code planes}: {@link SlabRanges#slabPlanes} picks such a count.
   */
  SlabRun startSlabs(SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times, int device, int from,
      int to);

  /**
   * Does now, before tasks come, what the first batches would wait for: the GPU backend opens
   * {@code devices} (context, kernels) and allocates a pinned pool of {@code pinnedPoolBytes}
   * (0: none) that batches carve their staging buffers from. The CPU backend has nothing to do.
   *
   * @return what was done, for the log
   */
  default String warm(java.util.List<Integer> devices, long pinnedPoolBytes) {
    return "nothing to warm on " + name(0);
  }

  /**
   * Makes up to {@code batches} batches for volumes of {@code input} stored as {@code stored} through {@code pipeline} on
   * {@code device}, as {@link #plan} would for a task of {@code volumesAtMost} volumes, and gives
   * them back to the backend's pools at once: the first tasks then take them instead of allocating
   * their own all at the same time (on the H200, sixteen first tasks spent 0.2 s in contended
   * device and pinned allocations). Makes none where the budget has no room now, nor for volumes
   * that run in slabs. The CPU backend makes none: its batches are cheap to allocate.
   *
   * @return what was made, for the log
   */
  default String makeBatchesAhead(Pipeline pipeline, VolumeShape input, io.volpool.format.ValueType stored, int batchSize,
      long volumesAtMost, int device, int outputGap, io.volpool.memory.MemoryBudget budget, int batches) {
    return "no batches made ahead on " + name(device);
  }

  /**
   * The device index of a task that Spark gave the GPU {@code gpuAddress} (null when it gave none):
   * the CPU backend has one device, 0.
   */
  int deviceFor(String gpuAddress);

  /** The names of {@link #metrics()}: what Spark's metrics system shows of a backend (executor plugin gauges). */
  java.util.List<String> METRICS = java.util.List.of("gpuKernelNanos", "gpuBusyNanos", "gpuDeviceBytesInUse",
      "gpuDeviceBytesPeak", "gpuDeviceBytesLimit", "gpuDriverBytesUsed", "pinnedBytesAllocated", "pinnedBytesPeak");

  /**
   * This backend's gauges now, by the names of {@link #METRICS} (summed over its devices); the CPU
   * backend has none. GPU times are measured by CUDA events around each batch's or slab's work:
   * {@code gpuKernelNanos} its kernels (the widening and narrowing ones too), {@code gpuBusyNanos} its
   * kernels and its output's copy back (input copies overlap the readers and are left out); batches on
   * separate streams overlap, so the sums can outrun the wall clock. Device bytes are the batches'
   * buffers against the share of the device volpool may take; {@code gpuDriverBytesUsed} is what the
   * driver reports in use on the devices, by every process; pinned bytes are the host memory pinned
   * for staging (pool chunks and blocks of their own).
   */
  default java.util.Map<String, Long> metrics() {
    return java.util.Map.of();
  }

  @Override
  void close();
}
