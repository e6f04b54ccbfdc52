package io.volpool.ops.maxpool3d;

import io.volpool.op.Parallel;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;

/**
 * maxpool3d on the CPU. The fast kernel is separable, as a max over a box is the max over D of the
 * max over H of the max over W: three 1-D passes cost {@code 3k} instead of {@code k^3} comparisons
 * per output. Both kernels use PyTorch's rule {@code m = (v > m || isnan(v)) ? v : m} from
 * {@code -inf}, which is associative on NaN, so any grouping gives PyTorch's result. Stateless.
 */
final class MaxPool3dCpu {
  private MaxPool3dCpu() {}

  /** PyTorch's comparison: a NaN wins, and stays. */
  static float max(float m, float v) {
    return v > m || Float.isNaN(v) ? v : m;
  }

  /** Per dimension, each output's window: first cell, count of cells inside the input (dilation apart). */
  record Windows(int[] first, int[] count, int dilation) {
    static Windows of(int len, int outLen, MaxPool3dSpec sp) {
      int[] first = new int[outLen];
      int[] count = new int[outLen];
      int dil = sp.dilation();
      for (int o = 0; o < outLen; o++) {
        int start = o * sp.stride() - sp.padding();
        int j0 = start < 0 ? (-start + dil - 1) / dil : 0;
        int j1 = Math.min(sp.kernel(), start > len - 1 ? 0 : (len - 1 - start) / dil + 1);
        first[o] = start + j0 * dil;
        count[o] = Math.max(0, j1 - j0);
      }
      return new Windows(first, count, dil);
    }

    int last(int o) {
      return first[o] + (count[o] - 1) * dilation;
    }
  }

  static void fast(MaxPool3dSpec sp, Parallel par, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    VolumeShape out = sp.outputShape(in);
    Windows wd = Windows.of(in.d(), out.d(), sp);
    Windows wh = Windows.of(in.h(), out.h(), sp);
    Windows ww = Windows.of(in.w(), out.w(), sp);
    int dil = sp.dilation();
    int inD0 = slab.inD0();
    int inDn = slab.inDn();
    int outD0 = slab.outD0();
    int outDn = slab.outDn();
    for (int od = outD0; od < outD0 + outDn; od++) {
      if (wd.count[od] > 0 && (wd.first[od] < inD0 || wd.last(od) >= inD0 + inDn)) {
        throw new IllegalArgumentException("output plane " + od + " reads input planes [" + wd.first[od] + ", "
            + (wd.last(od) + 1) + ") outside the slab's [" + inD0 + ", " + (inD0 + inDn) + ")");
      }
    }
    long inPlane = (long) inDn * in.h() * in.w();
    long outPlane = (long) outDn * out.h() * out.w();
    int ohw = out.h() * out.w();
    ThreadLocal<float[][]> scratch = ThreadLocal.withInitial(() -> new float[][] {
        new float[in.h() * out.w()], new float[inDn * ohw]});
    par.forEach(n * in.c(), unit -> {
      long xb = (long) unit * inPlane;
      long yb = (long) unit * outPlane;
      float[][] s = scratch.get();
      float[] rowW = s[0];
      float[] planes = s[1];
      for (int d = 0; d < inDn; d++) {
        // W pass over every row of plane d, then H pass into planes[d]
        int xp = (int) (xb + (long) d * in.h() * in.w());
        for (int hh = 0; hh < in.h(); hh++) {
          int xr = xp + hh * in.w();
          int r = hh * out.w();
          for (int ow = 0; ow < out.w(); ow++) {
            float m = Float.NEGATIVE_INFINITY;
            for (int j = 0, i = ww.first[ow]; j < ww.count[ow]; j++, i += dil) {
              m = max(m, x[xr + i]);
            }
            rowW[r + ow] = m;
          }
        }
        int pp = d * ohw;
        for (int oh = 0; oh < out.h(); oh++) {
          int o = pp + oh * out.w();
          for (int ow = 0; ow < out.w(); ow++) {
            float m = Float.NEGATIVE_INFINITY;
            for (int j = 0, hh = wh.first[oh]; j < wh.count[oh]; j++, hh += dil) {
              m = max(m, rowW[hh * out.w() + ow]);
            }
            planes[o + ow] = m;
          }
        }
      }
      for (int od = outD0; od < outD0 + outDn; od++) {
        int yo = (int) (yb + (long) (od - outD0) * ohw);
        for (int i = 0; i < ohw; i++) {
          float m = Float.NEGATIVE_INFINITY;
          for (int j = 0, d = wd.first[od]; j < wd.count[od]; j++, d += dil) {
            m = max(m, planes[(d - inD0) * ohw + i]);
          }
          y[yo + i] = m;
        }
      }
    });
  }

  /** PyTorch's definition as plain loops over each window, in PyTorch's order (D, then H, then W). */
  static void reference(MaxPool3dSpec sp, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    VolumeShape out = sp.outputShape(in);
    int k = sp.kernel();
    int s = sp.stride();
    int p = sp.padding();
    int dil = sp.dilation();
    long inPlane = (long) slab.inDn() * in.h() * in.w();
    long outPlane = (long) slab.outDn() * out.h() * out.w();
    for (int b = 0; b < n; b++) {
      for (int c = 0; c < in.c(); c++) {
        long xb = (b * in.c() + c) * inPlane;
        long yb = (b * out.c() + c) * outPlane;
        for (int od = slab.outD0(); od < slab.outD1(); od++) {
          for (int oh = 0; oh < out.h(); oh++) {
            for (int ow = 0; ow < out.w(); ow++) {
              float m = Float.NEGATIVE_INFINITY;
              for (int a = 0; a < k; a++) {
                int d = od * s - p + a * dil;
                if (d < 0 || d >= in.d()) {
                  continue;
                }
                if (d < slab.inD0() || d >= slab.inD1()) {
                  throw new IllegalArgumentException("output plane " + od + " reads input plane " + d
                      + " outside the slab's [" + slab.inD0() + ", " + slab.inD1() + ")");
                }
                for (int bb = 0; bb < k; bb++) {
                  int h = oh * s - p + bb * dil;
                  if (h < 0 || h >= in.h()) {
                    continue;
                  }
                  for (int cc = 0; cc < k; cc++) {
                    int w = ow * s - p + cc * dil;
                    if (w < 0 || w >= in.w()) {
                      continue;
                    }
                    m = max(m, x[(int) (xb + ((long) (d - slab.inD0()) * in.h() + h) * in.w() + w)]);
                  }
                }
              }
              y[(int) (yb + ((long) (od - slab.outD0()) * out.h() + oh) * out.w() + ow)] = m;
            }
          }
        }
      }
    }
  }
}
