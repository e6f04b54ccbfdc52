package io.volpool.ops.avgpool3d;

import io.volpool.op.Parallel;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;

/** avgpool3d on the CPU: the fast separable kernel and the float64 reference loops. Stateless. */
final class AvgPool3dCpu {
  private AvgPool3dCpu() {}

  /** Per-dimension window bounds and divisor factors for PyTorch's avg_pool rules. */
  private record Windows(int[] lo, int[] hi, int[] factor) {
    static Windows of(int len, int outLen, AvgPool3dSpec sp) {
      int[] lo = new int[outLen];
      int[] hi = new int[outLen];
      int[] f = new int[outLen];
      for (int o = 0; o < outLen; o++) {
        int s0 = o * sp.stride() - sp.padding();
        int e0 = Math.min(s0 + sp.kernel(), len + sp.padding());
        int full = e0 - s0;
        lo[o] = Math.max(s0, 0);
        hi[o] = Math.min(e0, len);
        f[o] = sp.countIncludePad() ? full : hi[o] - lo[o];
      }
      return new Windows(lo, hi, f);
    }
  }

  /**
   * The separable multi-threaded kernel: PyTorch's divisor is a product of per-dimension counts, so three 1-D
   * passes (W, H, D) give the same result with {@code 3k} instead of {@code k^3} adds per output.
   */
  static void fast(AvgPool3dSpec sp, Parallel par, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    VolumeShape out = sp.outputShape(in);
    Windows wd = Windows.of(in.d(), out.d(), sp);
    Windows wh = Windows.of(in.h(), out.h(), sp);
    Windows ww = Windows.of(in.w(), out.w(), sp);
    int units = n * in.c();
    int inD0 = slab.inD0();
    int inDn = slab.inDn();
    int outD0 = slab.outD0();
    int outDn = slab.outDn();
    long inPlane = (long) inDn * in.h() * in.w();
    long outPlane = (long) outDn * out.h() * out.w();
    ThreadLocal<float[][]> scratch = ThreadLocal.withInitial(() -> new float[][] {
        new float[in.h() * out.w()], new float[inDn * out.h() * out.w()]});
    par.forEach(units, unit -> {
      long xb = (long) unit * inPlane;
      long yb = (long) unit * outPlane;
      float[][] s = scratch.get();
      float[] rowW = s[0];
      float[] planes = s[1];
      int ohw = out.h() * out.w();
      for (int d = 0; d < inDn; d++) {
        // W pass over every row of plane d, then H pass into planes[d]
        int xp = (int) (xb + (long) d * in.h() * in.w());
        for (int hh = 0; hh < in.h(); hh++) {
          int xr = xp + hh * in.w();
          int r = hh * out.w();
          for (int ow = 0; ow < out.w(); ow++) {
            float sum = 0;
            for (int i = ww.lo[ow]; i < ww.hi[ow]; i++) {
              sum += x[xr + i];
            }
            rowW[r + ow] = sum;
          }
        }
        int pp = d * ohw;
        for (int oh = 0; oh < out.h(); oh++) {
          int o = pp + oh * out.w();
          for (int ow = 0; ow < out.w(); ow++) {
            planes[o + ow] = 0;
          }
          for (int hh = wh.lo[oh]; hh < wh.hi[oh]; hh++) {
            int r = hh * out.w();
            for (int ow = 0; ow < out.w(); ow++) {
              planes[o + ow] += rowW[r + ow];
            }
          }
        }
      }
      for (int od = outD0; od < outD0 + outDn; od++) {
        if (wd.lo[od] < inD0 || wd.hi[od] > inD0 + inDn) {
          throw new IllegalArgumentException("output plane " + od + " reads input planes [" + wd.lo[od] + ", " + wd.hi[od]
              + ") outside the slab's [" + inD0 + ", " + (inD0 + inDn) + ")");
        }
        int yo = (int) (yb + (long) (od - outD0) * ohw);
        for (int i = 0; i < ohw; i++) {
          y[yo + i] = 0;
        }
        for (int d = wd.lo[od]; d < wd.hi[od]; d++) {
          int pp = (d - inD0) * ohw;
          for (int i = 0; i < ohw; i++) {
            y[yo + i] += planes[pp + i];
          }
        }
        for (int oh = 0; oh < out.h(); oh++) {
          for (int ow = 0; ow < out.w(); ow++) {
            y[yo + oh * out.w() + ow] /= (float) (wd.factor[od] * wh.factor[oh] * ww.factor[ow]);
          }
        }
      }
    });
  }

  /** PyTorch's definition as plain loops, summing in float64. */
  static void reference(AvgPool3dSpec sp, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    VolumeShape out = sp.outputShape(in);
    int k = sp.kernel();
    int s = sp.stride();
    int p = sp.padding();
    long inPlane = (long) slab.inDn() * in.h() * in.w();
    long outPlane = (long) slab.outDn() * out.h() * out.w();
    for (int b = 0; b < n; b++) {
      for (int c = 0; c < in.c(); c++) {
        long xb = (b * in.c() + c) * inPlane;
        long yb = (b * out.c() + c) * outPlane;
        for (int od = slab.outD0(); od < slab.outD1(); od++) {
          for (int oh = 0; oh < out.h(); oh++) {
            for (int ow = 0; ow < out.w(); ow++) {
              int d0 = od * s - p;
              int h0 = oh * s - p;
              int w0 = ow * s - p;
              int d1 = Math.min(d0 + k, in.d() + p);
              int h1 = Math.min(h0 + k, in.h() + p);
              int w1 = Math.min(w0 + k, in.w() + p);
              int poolSize = (d1 - d0) * (h1 - h0) * (w1 - w0);
              d0 = Math.max(d0, 0);
              h0 = Math.max(h0, 0);
              w0 = Math.max(w0, 0);
              d1 = Math.min(d1, in.d());
              h1 = Math.min(h1, in.h());
              w1 = Math.min(w1, in.w());
              double sum = 0;
              for (int d = d0; d < d1; d++) {
                for (int h = h0; h < h1; h++) {
                  for (int w = w0; w < w1; w++) {
                    sum += x[(int) (xb + ((long) (d - slab.inD0()) * in.h() + h) * in.w() + w)];
                  }
                }
              }
              int divisor = sp.countIncludePad() ? poolSize : (d1 - d0) * (h1 - h0) * (w1 - w0);
              y[(int) (yb + ((long) (od - slab.outD0()) * out.h() + oh) * out.w() + ow)] = (float) (sum / divisor);
            }
          }
        }
      }
    }
  }
}
