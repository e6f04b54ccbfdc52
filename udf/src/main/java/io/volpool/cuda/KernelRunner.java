package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuFuncSetAttribute;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;

import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedStencil;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUstream;

/**
 * Launches the steps of a {@link KernelPlan} on one device. Owns the read-only device tables of
 * the generic fused kernel (tap tables, weights), uploaded once; {@link #close()} frees them.
 * Launches are asynchronous on the caller's stream; the caller makes the context current.
 */
public final class KernelRunner implements AutoCloseable {
  private static final int THREADS = 256;

  private final CudaDevice device;
  private final KernelPlan plan;
  private final Map<KernelPlan.Step, CUdeviceptr[]> tables = new HashMap<>();
  private final List<CUdeviceptr> owned = new ArrayList<>();
  private boolean closed;

  KernelRunner(CudaDevice device, KernelPlan plan) {
    this.device = device;
    this.plan = plan;
    try {
      for (KernelPlan.Step s : plan.steps()) {
        if (s instanceof KernelPlan.FusedGeneric g) {
          tables.put(s, upload(g.stencil()));
        }
        device.function(s.kernel());
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  public KernelPlan plan() {
    return plan;
  }

  private CUdeviceptr[] upload(FusedStencil st) {
    FusedStencil.Dim[] dims = {st.d(), st.h(), st.w()};
    CUdeviceptr[] out = new CUdeviceptr[11];
    int k = 0;
    for (FusedStencil.Dim d : dims) {
      out[k++] = ints(d.start, "tap starts");
      out[k++] = ints(d.pattern, "tap patterns");
      int[] off = new int[d.patterns() * d.taps];
      for (int p = 0; p < d.patterns(); p++) {
        System.arraycopy(d.offset[p], 0, off, p * d.taps, d.taps);
      }
      out[k++] = ints(off, "tap offsets");
    }
    out[k++] = floats(st.weights(), "fused effective weights");
    out[k] = floats(st.constant(), "fused constants");
    return out;
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

  private int blocks(long work) {
    long b = (work + THREADS - 1) / THREADS;
    long cap = (long) device.multiprocessors * 64;
    return (int) Math.max(1, Math.min(b, cap));
  }

  /** Launches every step for {@code n} whole volumes; {@code bufs[i]} holds buffer i of the plan. */
  public void launch(CUstream stream, CUdeviceptr[] bufs, int n) {
    launch(stream, bufs, n, plan.wholeSlabs());
  }

  /**
   * Launches every step for {@code n} volumes on windows along D: {@code slabs[i]} is stage i's
   * window (from {@link io.volpool.op.SlabPlan#slabs}) and {@code bufs[i]} holds it, laid out
   * {@code [n][C][inDn][H][W]}. A step from buffer {@code src} to {@code dst} reads window
   * {@code slabs[src]} and writes the output planes of {@code slabs[dst - 1]}.
   */
  public void launch(CUstream stream, CUdeviceptr[] bufs, int n, Slab[] slabs) {
    for (KernelPlan.Step s : plan.steps()) {
      Slab in = slabs[s.src()];
      Slab out = slabs[s.dst() - 1];
      launch(s, stream, bufs[s.src()], bufs[s.dst()], n, new Slab(in.inD0(), in.inDn(), out.outD0(), out.outDn()));
    }
  }

  /** A prepared launch: JCuda's parameter block and the grid, reused while buffers, batch size and window stay the same. */
  private record Launch(Pointer params, int gx, int gy, int gz, int bx, int by, int smem) {}

  /** Device pointers compare by address (NativePointerObject.equals), so the key is the buffers' addresses. */
  private record LaunchKey(KernelPlan.Step step, CUdeviceptr src, CUdeviceptr dst, int n, Slab window) {}

  private final Map<LaunchKey, Launch> launches = new HashMap<>();

  private void launch(KernelPlan.Step s, CUstream stream, CUdeviceptr src, CUdeviceptr dst, int n, Slab w) {
    LaunchKey key = new LaunchKey(s, src, dst, n, w);
    Launch l = launches.get(key);
    if (l == null) {
      if (launches.size() > 64) {
        launches.clear();
      }
      l = prepare(s, src, dst, n, w);
      launches.put(key, l);
    }
    VolumeShape in = plan.shapes().get(s.src());
    Cuda.check(cuLaunchKernel(device.function(s.kernel()), l.gx, l.gy, l.gz, l.bx, l.by, 1, l.smem, stream, l.params,
        null), "cuLaunchKernel(" + s.kernel() + ", " + n + " volumes " + in + " -> " + plan.shapes().get(s.dst())
        + ", input planes [" + w.inD0() + ", " + w.inD1() + "), output planes [" + w.outD0() + ", " + w.outD1() + "))");
  }

  /** The window parameters every kernel takes after its shapes: inD0, inDn, outD0, outDn. */
  private static Pointer[] window(Slab w) {
    return new Pointer[] {i(w.inD0()), i(w.inDn()), i(w.outD0()), i(w.outDn())};
  }

  private static Pointer params(Object... parts) {
    java.util.List<Pointer> all = new ArrayList<>();
    for (Object o : parts) {
      if (o instanceof Pointer[] ps) {
        all.addAll(java.util.Arrays.asList(ps));
      } else {
        all.add((Pointer) o);
      }
    }
    return Pointer.to(all.toArray(new Pointer[0]));
  }

  private Launch prepare(KernelPlan.Step s, CUdeviceptr src, CUdeviceptr dst, int n, Slab w) {
    Pointer params;
    int grid;
    int bx = THREADS;
    int by = 1;
    int gy = 1;
    int gz = 1;
    int smem = 0;
    VolumeShape in = plan.shapes().get(s.src());
    VolumeShape out = plan.shapes().get(s.dst());
    if (s instanceof KernelPlan.FusedGeneric g) {
      FusedStencil st = g.stencil();
      CUdeviceptr[] t = tables.get(s);
      params = params(Pointer.to(src), Pointer.to(dst), i(n), i(in.c()), i(out.c()), i(in.d()), i(in.h()),
          i(in.w()), i(out.d()), i(out.h()), i(out.w()), window(w), i(st.d().taps), i(st.h().taps), i(st.w().taps),
          i(st.h().patterns()), i(st.w().patterns()), Pointer.to(t[0]), Pointer.to(t[1]), Pointer.to(t[2]),
          Pointer.to(t[3]), Pointer.to(t[4]), Pointer.to(t[5]), Pointer.to(t[6]), Pointer.to(t[7]), Pointer.to(t[8]),
          Pointer.to(t[9]), Pointer.to(t[10]));
      grid = blocks((long) n * out.c() * w.outDn() * out.h() * out.w());
    } else if (s instanceof KernelPlan.FusedTaps2 f && f.unitSteps()) {
      params = params(Pointer.to(src), Pointer.to(dst), i(n), i(in.d()), i(in.h()), i(in.w()), i(out.d()),
          i(out.h()), i(out.w()), window(w), i(f.base()[0]), i(f.base()[1]), i(f.base()[2]),
          Pointer.to(tapWeights(f.stencil())));
      bx = 16;
      by = 16;
      grid = ceil(out.w(), 32) * ceil(out.h(), 16);
      gy = ceil(w.outDn(), 2);
      gz = n;
    } else if (s instanceof KernelPlan.FusedTaps2 f) {
      params = params(Pointer.to(src), Pointer.to(dst), i(n), i(in.d()), i(in.h()), i(in.w()), i(out.d()),
          i(out.h()), i(out.w()), window(w), i(f.base()[0]), i(f.step()[0]), i(f.base()[1]), i(f.step()[1]),
          i(f.base()[2]), i(f.step()[2]), Pointer.to(tapWeights(f.stencil())));
      bx = 16;
      by = 16;
      grid = ceil(out.w(), 32) * ceil(out.h(), 16);
      gy = w.outDn();
      gz = n;
    } else if (s instanceof KernelPlan.PipelineTaps2 p) {
      VolumeShape fusedOut = p.stencil().output();
      AvgPool3dSpec a = p.pool();
      params = params(Pointer.to(src), Pointer.to(dst), i(n), i(in.d()), i(in.h()), i(in.w()), i(fusedOut.d()),
          i(fusedOut.h()), i(fusedOut.w()), i(out.d()), i(out.h()), i(out.w()), window(w), i(p.base()[0]), i(p.base()[1]),
          i(p.base()[2]), i(a.kernel()), i(a.stride()), i(a.padding()), i(a.ceilMode() ? 1 : 0),
          i(a.countIncludePad() ? 1 : 0), Pointer.to(tapWeights(p.stencil())));
      bx = KernelPlan.PipelineTaps2.tileWidth(out.w());
      by = THREADS / bx;
      grid = ceil(out.w(), bx) * ceil(out.h(), by);
      gy = ceil(w.outDn(), 2);
      gz = n;
      smem = KernelPlan.PipelineTaps2.smemBytes(a, out.w());
      allowSmem(s, smem);
    } else if (s instanceof KernelPlan.AvgK3S2P1 a) {
      long nc = (long) n * in.c();
      params = params(Pointer.to(src), Pointer.to(dst), Pointer.to(new long[] {nc}), i(in.d()), i(in.h()),
          i(in.w()), i(out.d()), i(out.h()), i(out.w()), window(w), i(a.spec().countIncludePad() ? 1 : 0));
      bx = 32;
      by = 4;
      long total = nc * ceil(out.h(), 8) * ceil(out.w(), 64);
      grid = (int) Math.min(total, Integer.MAX_VALUE);
    } else if (s instanceof KernelPlan.AvgGeneric a) {
      long nc = (long) n * in.c();
      AvgPool3dSpec sp = a.spec();
      params = params(Pointer.to(src), Pointer.to(dst), Pointer.to(new long[] {nc}), i(in.d()), i(in.h()),
          i(in.w()), i(out.d()), i(out.h()), i(out.w()), window(w), i(sp.kernel()), i(sp.stride()), i(sp.padding()),
          i(sp.countIncludePad() ? 1 : 0));
      grid = blocks(nc * w.outDn() * out.h() * (long) out.w());
    } else {
      throw new IllegalStateException("unknown step " + s);
    }
    return new Launch(params, grid, gy, gz, bx, by, smem);
  }

  /** The {@code TapWeights<3,16>} kernel parameter: effective weights of combo 0, then the constants. */
  static float[] tapWeights(FusedStencil st) {
    float[] w = st.weights();
    float[] c = st.constant();
    int per = st.comboSize();
    float[] p = new float[per + c.length];
    System.arraycopy(w, 0, p, 0, per);
    System.arraycopy(c, 0, p, per, c.length);
    return p;
  }

  /** Above 48 KiB a kernel must opt in to more dynamic shared memory. */
  private void allowSmem(KernelPlan.Step s, int bytes) {
    if (bytes > 48 * 1024) {
      Cuda.check(cuFuncSetAttribute(device.function(s.kernel()),
          CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
          "cuFuncSetAttribute(" + s.kernel() + ", max dynamic shared memory " + bytes + ")");
    }
  }

  private static int ceil(int a, int b) {
    return (a + b - 1) / b;
  }

  private static Pointer i(int v) {
    return Pointer.to(new int[] {v});
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
