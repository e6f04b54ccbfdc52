package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;

import io.volpool.op.GpuLaunch;
import io.volpool.op.GpuStep;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUstream;

/**
 * Launches the steps of a {@link KernelPlan} on one device, turning each step's {@link GpuLaunch}
 * into JCuda's parameter block: it knows no operator. Owns the read-only device tables the steps
 * name ({@link GpuLaunch.Arg.Table}), uploaded once per plan; {@link #close()} frees them.
 * Launches are asynchronous on the caller's stream; the caller makes the context current.
 */
public final class KernelRunner implements AutoCloseable {

  private final CudaDevice device;
  private final KernelPlan plan;
  /** Device copies of the steps' tables, by identity of the host array. */
  private final Map<Object, CUdeviceptr> tables = new java.util.IdentityHashMap<>();
  private final List<CUdeviceptr> owned = new ArrayList<>();
  private boolean closed;

  KernelRunner(CudaDevice device, KernelPlan plan) {
    this.device = device;
    this.plan = plan;
    try {
      for (GpuStep s : plan.steps()) {
        device.function(s.kernel());
      }
      if (plan.narrowKernel() != null) {
        device.function(plan.narrowKernel());
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  public KernelPlan plan() {
    return plan;
  }

  /** The device copy of a step's table, uploaded on first use. */
  private CUdeviceptr table(Object values) {
    CUdeviceptr p = tables.get(values);
    if (p == null) {
      p = values instanceof int[] iv ? ints(iv, "kernel table") : floats((float[]) values, "kernel table");
      tables.put(values, p);
    }
    return p;
  }

  private CUdeviceptr ints(int[] v, String what) {
    CUdeviceptr p = alloc((long) v.length * Integer.BYTES, what);
    Cuda.check(cuMemcpyHtoD(p, Pointer.to(v), (long) v.length * Integer.BYTES), "cuMemcpyHtoD(" + what + ")");
    return p;
  }

  private CUdeviceptr floats(float[] v, String what) {
    CUdeviceptr p = alloc((long) v.length * Float.BYTES, what);
    Cuda.check(cuMemcpyHtoD(p, Pointer.to(v), (long) v.length * Float.BYTES), "cuMemcpyHtoD(" + what + ")");
    return p;
  }

  private CUdeviceptr alloc(long bytes, String what) {
    CUdeviceptr p = new CUdeviceptr();
    Cuda.check(cuMemAlloc(p, Math.max(bytes, 4)), "cuMemAlloc(" + bytes + " bytes for " + what + ")");
    owned.add(p);
    return p;
  }

  /** Blocks for a grid-stride kernel over {@code work} elements: capped at 64 per multiprocessor (the kernels loop). */
  private int blocks(long work, int threads) {
    long b = (work + threads - 1) / threads;
    long cap = (long) device.multiprocessors * 64;
    return (int) Math.max(1, Math.min(b, cap));
  }

  /**
   * Narrows {@code count} float32 values of {@code src} to the plan's output dtype into {@code dst}
   * ({@link KernelPlan#narrowKernel()}; the same arithmetic as {@link io.volpool.format.Narrow}).
   */
  public void narrow(CUstream stream, CUdeviceptr src, CUdeviceptr dst, long count) {
    String k = plan.narrowKernel();
    int threads = 256;
    Pointer params = Pointer.to(Pointer.to(src), Pointer.to(dst), Pointer.to(new long[] {count}));
    Cuda.check(cuLaunchKernel(device.function(k), blocks(count, threads), 1, 1, threads, 1, 1, 0, stream, params, null),
        "cuLaunchKernel(" + k + ", " + count + " values)");
  }

  /**
   * Widens {@code n} volumes of {@code numel} values stored as {@code type} (8 or 16 bits) from
   * {@code src} into float32 {@code dst}, rescaling volume {@code v} by the pair of floats
   * {@code (slope, intercept)} at {@code rescale[v]} (the same arithmetic as {@link
   * io.volpool.format.ValueType#widen}).
   */
  public void widen(CUstream stream, CUdeviceptr src, CUdeviceptr dst, CUdeviceptr rescale, int n, long numel,
      io.volpool.format.ValueType type) {
    int threads = 256;
    Pointer params = Pointer.to(Pointer.to(src), Pointer.to(dst), Pointer.to(new long[] {numel}),
        Pointer.to(new int[] {widenCode(type.dtype())}), Pointer.to(new int[] {type.bigEndian() ? 1 : 0}),
        Pointer.to(rescale));
    int bx = Math.max(1, blocks(numel, threads) / Math.max(1, Math.min(n, 64)));
    Cuda.check(cuLaunchKernel(device.function("widen"), bx, n, 1, threads, 1, 1, 0, stream, params, null),
        "cuLaunchKernel(widen, " + n + " volumes of " + numel + " " + type + ")");
  }

  /** The widen kernel's type code: 0 uint8, 1 int8, 2 uint16, 3 int16, 4 float16, 5 bfloat16. */
  static int widenCode(io.volpool.format.Dtype d) {
    switch (d) {
      case UINT8:
        return 0;
      case INT8:
        return 1;
      case UINT16:
        return 2;
      case INT16:
        return 3;
      case FLOAT16:
        return 4;
      case BFLOAT16:
        return 5;
      default:
        throw new IllegalArgumentException("the GPU widens 8- and 16-bit values, not " + d);
    }
  }

  /** Launches every step for {@code n} whole volumes; {@code bufs[i]} holds buffer i of the plan. */
  public void launch(CUstream stream, CUdeviceptr[] bufs, int n) {
    launch(stream, bufs, n, plan.wholeSlabs(), null);
  }

  /**
   * The same for volumes of stored values: {@code rescale} holds their {@code (slope, intercept)}
   * pairs, which a first step that reads the stored values takes ({@link GpuLaunch.Arg.Rescale}).
   */
  public void launch(CUstream stream, CUdeviceptr[] bufs, int n, CUdeviceptr rescale) {
    launch(stream, bufs, n, plan.wholeSlabs(), rescale);
  }

  /**
   * Launches every step for {@code n} volumes on windows along D: {@code slabs[i]} is stage i's
   * window (from {@link io.volpool.op.SlabPlan#slabs}) and {@code bufs[i]} holds it, laid out
   * {@code [n][C][inDn][H][W]}. A step from buffer {@code src} to {@code dst} reads window
   * {@code slabs[src]} and writes the output planes of {@code slabs[dst - 1]}.
   */
  public void launch(CUstream stream, CUdeviceptr[] bufs, int n, Slab[] slabs) {
    launch(stream, bufs, n, slabs, null);
  }

  private void launch(CUstream stream, CUdeviceptr[] bufs, int n, Slab[] slabs, CUdeviceptr rescale) {
    for (GpuStep s : plan.steps()) {
      Slab in = slabs[s.src()];
      Slab out = slabs[s.dst() - 1];
      launch(s, stream, bufs[s.src()], bufs[s.dst()], rescale, n, new Slab(in.inD0(), in.inDn(), out.outD0(),
          out.outDn()));
    }
  }

  /** A prepared launch: JCuda's parameter block and the grid, reused while buffers, batch size and window stay the same. */
  private record Launch(CUfunction fn, Pointer params, int gx, int gy, int gz, int bx, int by, int smem) {}

  /**
   * Device pointers compare by address (NativePointerObject.equals), so the key is the buffers'
   * addresses; the step by identity (one plan's steps). Not a record: a record's first hashCode links
   * its generated method, and the first tasks' launches waited on that and on the step records'
   * hashCode of every field (H200 profile).
   */
  private static final class LaunchKey {
    private final GpuStep step;
    private final CUdeviceptr src;
    private final CUdeviceptr dst;
    private final int n;
    private final Slab w;

    LaunchKey(GpuStep step, CUdeviceptr src, CUdeviceptr dst, int n, Slab w) {
      this.step = step;
      this.src = src;
      this.dst = dst;
      this.n = n;
      this.w = w;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof LaunchKey k && k.step == step && k.src.equals(src) && k.dst.equals(dst) && k.n == n
          && k.w.inD0() == w.inD0() && k.w.inDn() == w.inDn() && k.w.outD0() == w.outD0() && k.w.outDn() == w.outDn();
    }

    @Override
    public int hashCode() {
      int h = System.identityHashCode(step);
      h = 31 * h + src.hashCode();
      h = 31 * h + dst.hashCode();
      h = 31 * h + n;
      h = 31 * h + w.inD0();
      h = 31 * h + w.inDn();
      h = 31 * h + w.outD0();
      return 31 * h + w.outDn();
    }
  }

  private final Map<LaunchKey, Launch> launches = new HashMap<>();

  private void launch(GpuStep s, CUstream stream, CUdeviceptr src, CUdeviceptr dst, CUdeviceptr rescale, int n,
      Slab w) {
    LaunchKey key = new LaunchKey(s, src, dst, n, w);
    Launch l = launches.get(key);
    if (l == null) {
      if (launches.size() > 64) {
        launches.clear();
      }
      l = prepare(s, src, dst, rescale, n, w);
      launches.put(key, l);
    }
    VolumeShape in = plan.shapes().get(s.src());
    Cuda.check(cuLaunchKernel(l.fn, l.gx, l.gy, l.gz, l.bx, l.by, 1, l.smem, stream, l.params,
        null), "cuLaunchKernel(" + s.kernel() + ", " + n + " volumes " + in + " -> " + plan.shapes().get(s.dst())
        + ", input planes [" + w.inD0() + ", " + w.inD1() + "), output planes [" + w.outD0() + ", " + w.outD1() + "))");
  }

  private Launch prepare(GpuStep s, CUdeviceptr src, CUdeviceptr dst, CUdeviceptr rescale, int n, Slab w) {
    GpuLaunch g = s.launch(n, w);
    List<Pointer> ps = new ArrayList<>();
    for (GpuLaunch.Arg a : g.args()) {
      if (a instanceof GpuLaunch.Arg.Src) {
        ps.add(Pointer.to(src));
      } else if (a instanceof GpuLaunch.Arg.Dst) {
        ps.add(Pointer.to(dst));
      } else if (a instanceof GpuLaunch.Arg.Rescale) {
        if (rescale == null) {
          throw new IllegalStateException(s.kernel() + " reads stored values but the batch passed no rescale pairs");
        }
        ps.add(Pointer.to(rescale));
      } else if (a instanceof GpuLaunch.Arg.I32 x) {
        ps.add(Pointer.to(new int[] {x.value()}));
      } else if (a instanceof GpuLaunch.Arg.I64 x) {
        ps.add(Pointer.to(new long[] {x.value()}));
      } else if (a instanceof GpuLaunch.Arg.Struct x) {
        ps.add(Pointer.to(x.values()));
      } else if (a instanceof GpuLaunch.Arg.Table x) {
        ps.add(Pointer.to(table(x.values())));
      }
    }
    int gx = g.work() > 0 ? blocks(g.work(), g.blockX()) : g.gridX();
    if (g.sharedBytes() > 48 * 1024) {
      device.allowDynamicSmem(s.kernel(), g.sharedBytes());
    }
    return new Launch(device.function(s.kernel()), Pointer.to(ps.toArray(new Pointer[0])), gx, g.gridY(), g.gridZ(), g.blockX(), g.blockY(),
        g.sharedBytes());
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    device.makeCurrent();
    for (CUdeviceptr p : owned) {
      Cuda.check(cuMemFree(p), "cuMemFree(kernel table)");
    }
    owned.clear();
  }
}
