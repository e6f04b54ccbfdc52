package io.volpool.cuda;

import static jcuda.driver.JCudaDriver.cuMemcpy2DAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;

import jcuda.Pointer;
import jcuda.driver.CUDA_MEMCPY2D;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUmemorytype;
import jcuda.driver.CUstream;

/**
 * One asynchronous copy of {@code rows} rows of {@code width} bytes between pitched areas on the host
 * (pinned) or a device: one plain copy when the rows are contiguous, one 2D copy when both pitches are
 * within the device's limit, else a copy per row. The one place that sets up CUDA's 2D copies (batch
 * outputs with a gap before each volume, slab windows and halos). Stateless.
 */
final class StridedCopy {
  private StridedCopy() {}

  /** A host (pinned) or device address; exactly one of the two is set. */
  record At(Pointer host, CUdeviceptr device) {
    static At host(Pointer p) {
      return new At(p, null);
    }

    static At device(CUdeviceptr p) {
      return new At(null, p);
    }

    At plus(long bytes) {
      return host != null ? host(host.withByteOffset(bytes)) : device(device.withByteOffset(bytes));
    }

    void into(CUDA_MEMCPY2D c, boolean source) {
      int type = host != null ? CUmemorytype.CU_MEMORYTYPE_HOST : CUmemorytype.CU_MEMORYTYPE_DEVICE;
      if (source) {
        c.srcMemoryType = type;
        c.srcHost = host;
        c.srcDevice = device;
      } else {
        c.dstMemoryType = type;
        c.dstHost = host;
        c.dstDevice = device;
      }
    }

    String kind() {
      return host != null ? "H" : "D";
    }
  }

  /**
   * Queues the copy on {@code stream}.
   *
   * @param maxPitch the device's largest pitch of a 2D copy ({@link CudaDevice#maxPitch})
   * @param what what is copied, for the error message
   */
  static void copy(CUstream stream, long maxPitch, At src, long srcPitch, At dst, long dstPitch, long width, long rows,
      String what) {
    String call = "cuMemcpy" + src.kind() + "to" + dst.kind() + "(" + rows + " x " + CudaExecutor.mib(width) + " "
        + what + ")";
    if (rows == 1 || (srcPitch == width && dstPitch == width)) {
      Cuda.check(plain(src, dst, width * rows, stream), call);
    } else if (Math.max(srcPitch, dstPitch) > maxPitch) {
      for (long r = 0; r < rows; r++) {
        Cuda.check(plain(src.plus(r * srcPitch), dst.plus(r * dstPitch), width, stream), call);
      }
    } else {
      CUDA_MEMCPY2D c = new CUDA_MEMCPY2D();
      src.into(c, true);
      dst.into(c, false);
      c.srcPitch = srcPitch;
      c.dstPitch = dstPitch;
      c.WidthInBytes = width;
      c.Height = rows;
      Cuda.check(cuMemcpy2DAsync(c, stream), call);
    }
  }

  private static int plain(At src, At dst, long bytes, CUstream stream) {
    if (src.host() != null && dst.host() != null) {
      throw new IllegalArgumentException("a host-to-host copy is not a CUDA copy");
    }
    return src.host() != null ? cuMemcpyHtoDAsync(dst.device(), src.host(), bytes, stream)
        : dst.host() != null ? cuMemcpyDtoHAsync(dst.host(), src.device(), bytes, stream)
        : cuMemcpyDtoDAsync(dst.device(), src.device(), bytes, stream);
  }
}
