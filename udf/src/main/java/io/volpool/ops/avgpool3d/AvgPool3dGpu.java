package io.volpool.ops.avgpool3d;

import static io.volpool.op.GpuLaunch.args;
import static io.volpool.op.GpuLaunch.i32;
import static io.volpool.op.GpuLaunch.poolArgs;

import io.volpool.op.GpuLaunch;
import io.volpool.op.GpuStep;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;

/** avgpool3d's CUDA kernels ({@code avgpool_generic}, {@code avgpool_k3s2p1} in volpool.cu) and their launches. */
final class AvgPool3dGpu {
  private AvgPool3dGpu() {}

  /** The kernel for {@code spec} at stage {@code i} on inputs {@code in}: the fast path where it applies. */
  static GpuStep step(AvgPool3dSpec spec, int i, VolumeShape in, VolumeShape out) {
    return k3s2p1(spec, in) ? new K3S2P1(i, spec, in, out) : new Generic(i, spec, in, out);
  }

  /** Kernel 3, stride 2, padding 1 and W a multiple of 4: each input byte read once, in 16-byte loads. */
  static boolean k3s2p1(AvgPool3dSpec spec, VolumeShape in) {
    return spec.kernel() == 3 && spec.stride() == 2 && spec.padding() == 1 && in.w() % 4 == 0;
  }

  /** Any parameters: one thread per output element. */
  record Generic(int src, AvgPool3dSpec spec, VolumeShape in, VolumeShape out) implements GpuStep {
    @Override
    public String kernel() {
      return "avgpool_generic";
    }

    @Override
    public int dst() {
      return src + 1;
    }

    @Override
    public GpuLaunch launch(int n, Slab w) {
      return GpuLaunch.perOutput(args(poolArgs(n, in, out, w), i32(spec.kernel()), i32(spec.stride()),
          i32(spec.padding()), i32(spec.countIncludePad() ? 1 : 0)), n, out, w);
    }
  }

  /** The k3s2p1 fast path: blocks of (32, 4) threads, each covering 2 x 2 outputs and marching along D. */
  record K3S2P1(int src, AvgPool3dSpec spec, VolumeShape in, VolumeShape out) implements GpuStep {
    @Override
    public String kernel() {
      return "avgpool_k3s2p1";
    }

    @Override
    public int dst() {
      return src + 1;
    }

    @Override
    public GpuLaunch launch(int n, Slab w) {
      return GpuLaunch.oneReadPool(args(poolArgs(n, in, out, w), i32(spec.countIncludePad() ? 1 : 0)), n, in, out);
    }
  }
}
