package io.volpool.ops.maxpool3d;

import static io.volpool.op.GpuLaunch.args;
import static io.volpool.op.GpuLaunch.i32;
import static io.volpool.op.GpuLaunch.poolArgs;

import io.volpool.op.GpuLaunch;
import io.volpool.op.GpuStep;
import io.volpool.op.OneReadPoolStep;
import io.volpool.op.StageStep;
import io.volpool.op.VolumeShape;

/**
 * maxpool3d's CUDA kernels ({@code maxpool_generic}, and {@code maxpool_k3s2p1}: avgpool3d's
 * one-read kernel instantiated with PyTorch's max instead of a sum, also on stored 8- and 16-bit
 * values) and their launches.
 */
final class MaxPool3dGpu {
  private MaxPool3dGpu() {}

  static GpuStep step(MaxPool3dSpec spec, int i, VolumeShape in, VolumeShape out) {
    if (k3s2p1(spec, in)) {
      // each input byte read once; also reads 8- and 16-bit values as stored when it is a batch's first step
      return OneReadPoolStep.of("maxpool_k3s2p1", i, in, out, java.util.List.of());
    }
    // any parameters: one thread per output element
    return new StageStep("maxpool_generic", i, (n, w) -> GpuLaunch.perOutput(args(poolArgs(n, in, out, w),
        i32(spec.kernel()), i32(spec.stride()), i32(spec.padding()), i32(spec.dilation())), n, out, w));
  }

  /** Kernel 3, stride 2, padding 1, dilation 1 (any ceil_mode) and W a multiple of 4 (16-byte rows). */
  static boolean k3s2p1(MaxPool3dSpec spec, VolumeShape in) {
    return spec.kernel() == 3 && spec.stride() == 2 && spec.padding() == 1 && spec.dilation() == 1
        && OneReadPoolStep.takes(in);
  }
}
