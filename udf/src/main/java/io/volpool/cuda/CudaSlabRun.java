package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD32Async;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSink;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.SlabInput;
import io.volpool.backend.SlabRun;
import io.volpool.cuda.StridedCopy.At;
import io.volpool.memory.BufferPool;
import io.volpool.op.Slab;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import jcuda.driver.CUdeviceptr;

/**
 * One volume through a pipeline on a GPU in slabs along D: the same {@link SlabPlan} windows and
 * halos as the CPU, run by the same kernels as whole volumes, told their window. The halo stays on
 * the device: two device input windows are used in turn, and each slab's window gets the planes it
 * shares with the last one by a device-to-device copy from the other, so {@link SlabInput} reads
 * only the new planes of each slab, straight into one of two pinned staging areas (the next slab's
 * while the GPU runs this one), and only those cross the bus. Each step then launches the plan's
 * kernels on the window and copies the slab's output planes back into one of two pinned output
 * regions; while the GPU runs a slab, the task thread hands the previous slab's output to the sink,
 * so writing the output, the GPU's work and reading the next planes overlap. Holds one device slot
 * (a window per used buffer, and the second input window) and one pinned block (two staging areas,
 * two output regions), never the volume and nothing on the heap. Driven by one task thread.
 */
final class CudaSlabRun implements SlabRun {
  private static final int NAN_BITS = Float.floatToRawIntBits(Float.NaN);

  private final CudaDevice device;
  private final SlabPlan plan;
  private final KernelPlan kernels;
  private final PlaneSink dst;
  private final PhaseTimes times;
  private final boolean poison;
  private final int t;
  private final long bytes;
  private final BufferPool<CudaBackend.PinnedKey, CudaBackend.PinnedBlock> pinned;
  private final CudaBackend.PinnedKey hostKey;
  private final DeviceSlot.Key slotKey;
  private final long stagingBytes;
  private DeviceSlot slot;
  private CudaBackend.PinnedBlock host;
  private SlabInput input;
  private FloatBuffer stagingA;
  private FloatBuffer stagingB;
  /** The two device input windows, used in turn; the last slab's window is in {@code inWindows[(slabsDone + 1) % 2]}. */
  private CUdeviceptr[] inWindows;
  /** The slot's buffers as the kernels see them, buffer 0 the current input window. */
  private CUdeviceptr[] launchBuffers;
  /** The input planes the device window of the last slab holds, {@code [heldLo, heldHi)}. */
  private int heldLo;
  private int heldHi;
  private final long outRegionBytes;
  private FloatBuffer[] outs;
  private int o0;
  /** The output plane after the run's last slab: the volume's end, or its range's. */
  private final int end;
  private int slabsDone;
  /** The slab whose output waits in its region for the sink: output planes [pendingO0, pendingO1), or none. */
  private int pendingO0 = -1;
  private int pendingO1;
  private int pendingRegion;
  private boolean closed;

  /**
   * Device buffer sizes of a slab run: buffer i holds stage i's widest input window, buffer
   * {@code stages} the output planes, and one more the second input window (the halo is copied from
   * one input window to the other).
   */
  static List<Long> deviceSizes(KernelPlan kp, SlabPlan sp, int planes) {
    int t = Math.min(planes, sp.output().d());
    int stages = sp.pipeline().stages().size();
    List<Long> sizes = new ArrayList<>();
    for (int i = 0; i <= stages; i++) {
      long floats = i == stages ? Slab.floats(sp.output(), t) : Slab.floats(sp.shape(i), sp.widestInput(i, t));
      sizes.add(kp.used(i) ? floats * Float.BYTES : 0L);
    }
    sizes.add(sizes.get(0));
    return sizes;
  }

  /**
   * Pinned bytes: two staging areas of one slab's new input planes (one read ahead) and two regions
   * of one slab's output planes (one being written out).
   */
  private static long pinnedBytes(SlabPlan sp, int t) {
    return (2 * SlabInput.newFloats(sp, t) + 2 * Slab.floats(sp.output(), t)) * Float.BYTES;
  }

  /** Host bytes from the memory budget: the pinned block. */
  static long hostBytes(SlabPlan sp, int planes) {
    return pinnedBytes(sp, Math.min(planes, sp.output().d()));
  }

  CudaSlabRun(CudaDevice device, SlabPlan plan, int planes, PlaneSource src, PlaneSink dst, PhaseTimes times,
      BufferPool<CudaBackend.PinnedKey, CudaBackend.PinnedBlock> pinned, ExecutorService reader, int readThreads,
      boolean poison, int from, int to) {
    this.device = device;
    this.plan = plan;
    this.kernels = KernelPlan.of(plan.pipeline(), plan.input());
    this.dst = dst;
    this.times = times;
    this.poison = poison;
    this.pinned = pinned;
    this.t = Math.max(1, Math.min(planes, plan.output().d()));
    io.volpool.backend.SlabRanges.check(plan, t, from, to);
    this.o0 = from;
    this.end = to;
    // a range after the volume's start reads its first slab's whole window, which the whole run's
    // first slab (clipped by the padding) may not: room for the widest window then
    this.stagingBytes = (from > 0 ? SlabInput.floats(plan, t) : SlabInput.newFloats(plan, t)) * Float.BYTES;
    this.bytes = 2 * stagingBytes + 2 * Slab.floats(plan.output(), t) * Float.BYTES;
    this.outRegionBytes = Slab.floats(plan.output(), t) * Float.BYTES;
    this.hostKey = new CudaBackend.PinnedKey(device.ordinal, bytes);
    this.slotKey = new DeviceSlot.Key(List.copyOf(deviceSizes(kernels, plan, t)));
    String what = "GPU slabs of " + t + " output planes of volume " + src.record() + " " + plan.input() + " through "
        + plan.pipeline().describe();
    long w0 = System.nanoTime();
    long a0 = BufferPool.allocatingNanos();
    try {
      device.makeCurrent();
      // device memory first, then host memory: the order batches take them in, so waits cannot form a cycle
      slot = device.slots.take(slotKey, true, () -> what + " (device windows)");
      host = pinned.take(hostKey, true, () -> what + " (pinned staging and output)");
      stagingA = floats(0, stagingBytes);
      stagingB = floats(stagingBytes, stagingBytes);
      outs = new FloatBuffer[] {floats(2 * stagingBytes, outRegionBytes), floats(2 * stagingBytes + outRegionBytes,
          outRegionBytes)};
      input = SlabInput.newPlanesOnly(plan, t, src, times, reader, stagingA, stagingB, bytes(0, stagingBytes),
          bytes(stagingBytes, stagingBytes), readThreads).until(to);
      inWindows = new CUdeviceptr[] {slot.buffers[0], slot.buffers[slot.buffers.length - 1]};
      launchBuffers = slot.buffers.clone();
    } catch (RuntimeException | Error e) {
      giveBack();
      throw e;
    } finally {
      long allocating = BufferPool.allocatingNanos() - a0;
      times.add(Phase.ALLOCATE, allocating);
      times.add(Phase.WAIT_BUDGET, Math.max(0, System.nanoTime() - w0 - allocating));
    }
  }

  /** A little-endian float view of {@code length} bytes of the pinned block from byte {@code at}. */
  private FloatBuffer floats(long at, long length) {
    return bytes(at, length).asFloatBuffer();
  }

  private java.nio.ByteBuffer bytes(long at, long length) {
    return host.buffer().slice((int) at, (int) length).order(ByteOrder.LITTLE_ENDIAN);
  }

  @Override
  public int planes() {
    return t;
  }

  @Override
  public long bytes() {
    return bytes;
  }

  @Override
  public boolean step() {
    if (o0 >= end) {
      handOver();
      return false;
    }
    int o1 = Math.min(end, o0 + t);
    FloatBuffer x = input.next(o0);
    long xAt = x == stagingA ? 0 : stagingBytes;
    int[] window = plan.inputPlanes(o0, o1);
    int a = window[0];
    int b = window[1];
    int from = input.firstNew();
    int outFloats = Math.toIntExact(Slab.floats(plan.output(), o1 - o0));
    VolumeShape in = plan.input();
    long plane = (long) in.h() * in.w() * Float.BYTES;
    device.makeCurrent();
    DeviceSlot s = slot;
    CUdeviceptr win = inWindows[slabsDone % 2];
    Cuda.check(cuEventRecord(s.events[0], s.stream), "cuEventRecord");
    if (poison) {
      // every plane of the window must come from the halo or the new planes: a gap would show as NaN
      Cuda.check(cuMemsetD32Async(win, NAN_BITS, slotKey.sizes().get(0) / Float.BYTES, s.stream),
          "cuMemsetD32Async(poison slab input window)");
    }
    if (a < from) {
      // the halo: planes [a, from), which the last slab's window [heldLo, heldHi) holds on the device
      if (slabsDone == 0 || a < heldLo || from > heldHi) {
        throw new IllegalStateException("slab of output planes [" + o0 + ", " + o1 + ") of " + input.record() + " needs input"
            + " planes [" + a + ", " + from + ") from the last window, which holds [" + heldLo + ", " + heldHi + ")");
      }
      StridedCopy.copy(s.stream, device.maxPitch, At.device(inWindows[(slabsDone + 1) % 2].withByteOffset((a - heldLo) * plane)),
          (heldHi - heldLo) * plane, At.device(win), (b - a) * plane, (from - a) * plane, in.c(), "slab halo");
    }
    if (from < b) {
      StridedCopy.copy(s.stream, device.maxPitch, At.host(host.pointer().withByteOffset(xAt)), (b - from) * plane,
          At.device(win.withByteOffset((from - a) * plane)), (b - a) * plane, (b - from) * plane, in.c(), "slab input planes");
    }
    heldLo = a;
    heldHi = b;
    Cuda.check(cuEventRecord(s.events[1], s.stream), "cuEventRecord");
    if (poison) {
      for (int i = 1; i < s.buffers.length - 1; i++) {
        if (s.buffers[i] != null) {
          Cuda.check(cuMemsetD32Async(s.buffers[i], NAN_BITS, slotKey.sizes().get(i) / Float.BYTES, s.stream),
              "cuMemsetD32Async(poison slab buffer " + i + ")");
        }
      }
    }
    Slab[] slabs = plan.slabs(o0, o1);
    launchBuffers[0] = win;
    s.runner(kernels).launch(s.stream, launchBuffers, 1, slabs);
    Cuda.check(cuEventRecord(s.events[2], s.stream), "cuEventRecord");
    int region = slabsDone % 2;
    Cuda.check(cuMemcpyDtoHAsync(host.pointer().withByteOffset(2 * stagingBytes + region * outRegionBytes),
        s.buffers[kernels.outputBuffer()], (long) outFloats * Float.BYTES, s.stream),
        "cuMemcpyDtoHAsync(" + CudaExecutor.mib((long) outFloats * 4) + " slab output)");
    Cuda.check(cuEventRecord(s.events[3], s.stream), "cuEventRecord");
    // the last slab's output, in the other region, goes to the sink while the GPU runs this one
    handOver();
    long w0 = System.nanoTime();
    Cuda.check(cuEventSynchronize(s.events[3]), "cuEventSynchronize(slab of output planes [" + o0 + ", " + o1 + ") of "
        + input.record() + ", " + kernels.describe() + ")");
    times.add(Phase.WAIT_GPU, System.nanoTime() - w0);
    times.add(Phase.H2D, elapsedNanos(0, 1));
    long kernelTime = elapsedNanos(1, 2);
    long d2h = elapsedNanos(2, 3);
    times.add(Phase.KERNELS, kernelTime);
    times.add(Phase.D2H, d2h);
    device.kernelNanos.addAndGet(kernelTime);
    device.busyNanos.addAndGet(kernelTime + d2h);
    pendingO0 = o0;
    pendingO1 = o1;
    pendingRegion = region;
    slabsDone++;
    o0 = o1;
    return true;
  }

  /** Hands the waiting slab output, if any, to the sink. */
  private void handOver() {
    if (pendingO0 >= 0) {
      int p0 = pendingO0;
      pendingO0 = -1;
      dst.write(p0, pendingO1, outs[pendingRegion]);
    }
  }

  private long elapsedNanos(int from, int to) {
    float[] ms = new float[1];
    Cuda.check(cuEventElapsedTime(ms, slot.events[from], slot.events[to]), "cuEventElapsedTime");
    return (long) (ms[0] * 1e6);
  }

  private void giveBack() {
    try {
      if (slot != null) {
        device.makeCurrent();
        Cuda.check(jcuda.driver.JCudaDriver.cuStreamSynchronize(slot.stream), "cuStreamSynchronize(slab run closed)");
      }
    } finally {
      if (host != null) {
        pinned.give(hostKey, host);
        host = null;
      }
      if (slot != null) {
        device.slots.give(slotKey, slot);
        slot = null;
      }
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (input != null) {
      input.close();
    }
    giveBack();
  }
}
