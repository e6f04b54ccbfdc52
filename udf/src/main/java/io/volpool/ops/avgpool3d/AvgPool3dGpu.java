package io.volpool.ops.avgpool3d;

import static io.volpool.op.GpuLaunch.args;
import static io.volpool.op.GpuLaunch.i32;
import static io.volpool.op.GpuLaunch.poolArgs;

import io.volpool.op.GpuLaunch;
import io.volpool.op.GpuStep;
import io.volpool.op.OneReadPoolStep;
import io.volpool.op.StageStep;
import io.volpool.op.VolumeShape;

/** avgpool3d's CUDA kernels ({@code avgpool_generic}, {@code avgpool_k3s2p1} in volpool.cu) and their launches. */
final class AvgPool3dGpu {
  private AvgPool3dGpu() {}

  /** The kernel for {@code spec} at stage {@code i} on inputs {@code in}: the fast path where it applies. */
  static GpuStep step(AvgPool3dSpec spec, int i, VolumeShape in, VolumeShape out) {
    if (k3s2p1(spec, in)) {
      // each input byte read once; also reads 8- and 16-bit values as stored when it is a batch's first step
      return OneReadPoolStep.of("avgpool_k3s2p1", i, in, out, java.util.List.of(i32(spec.countIncludePad() ? 1 : 0)));
    }
    // any parameters: one thread per output element
    return new StageStep("avgpool_generic", i, (n, w) -> GpuLaunch.perOutput(args(poolArgs(n, in, out, w),
        i32(spec.kernel()), i32(spec.stride()), i32(spec.padding()), i32(spec.countIncludePad() ? 1 : 0)), n, out, w));
  }

  /** Kernel 3, stride 2, padding 1 and W a multiple of 4: each input byte read once, in 16-byte loads. */
  static boolean k3s2p1(AvgPool3dSpec spec, VolumeShape in) {
    return spec.kernel() == 3 && spec.stride() == 2 && spec.padding() == 1 && OneReadPoolStep.takes(in);
  }
}
