package io.volpool.cpu;

import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedOp;
import io.volpool.op.FusedStencil;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;
import java.util.concurrent.ForkJoinPool;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * Multi-threaded CPU kernels. {@code fused} runs the precomputed {@link FusedStencil} (a few taps
 * per dimension instead of a full transposed convolution), with all output channels of a point
 * accumulated together so each input value is loaded once per tap. {@code avgPool3d} is separable:
 * PyTorch's divisor is a product of per-dimension counts, so three 1-D passes (W, H, D) give the
 * same result with {@code 3k} instead of {@code k^3} adds per output. Work is split over
 * (volume, slab) units on a pool shared by the JVM, so concurrent Spark tasks do not oversubscribe cores.
 */
public final class FastKernels implements VolumeKernels {
  private final ForkJoinPool pool;

  /** Uses {@code pool} for parallel work; the caller owns the pool. */
  public FastKernels(ForkJoinPool pool) {
    this.pool = pool;
  }

  private void parallel(int units, IntConsumer body) {
    if (units == 1 || pool.getParallelism() == 1) {
      for (int u = 0; u < units; u++) {
        body.accept(u);
      }
      return;
    }
    pool.submit(() -> IntStream.range(0, units).parallel().forEach(body)).join();
  }

  @Override
  public void fused(FusedOp op, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    FusedStencil st = FusedStencil.of(op, in);
    VolumeShape out = st.output();
    FusedStencil.Dim dd = st.d();
    FusedStencil.Dim dh = st.h();
    FusedStencil.Dim dw = st.w();
    int cin = in.c();
    int cout = out.c();
    int td = dd.taps;
    int th = dh.taps;
    int tw = dw.taps;
    int per = st.comboSize();
    float[] wts = st.weights();
    float[] cst = st.constant();
    int inHW = in.h() * in.w();
    int inPlane = slab.inDn() * inHW;
    int outHW = out.h() * out.w();
    int outPlane = slab.outDn() * outHW;
    int inD0 = slab.inD0();
    int outD0 = slab.outD0();
    int units = slab.outDn();
    parallel(n * units, unit -> {
      int b = unit / units;
      int od = outD0 + unit % units;
      int xb = b * cin * inPlane;
      int yb = b * cout * outPlane;
      float[] acc = new float[cout];
      int pd = dd.pattern[od];
      int[] offD = dd.offset[pd];
      int sd = dd.start[od] - inD0;
      for (int oh = 0; oh < out.h(); oh++) {
        int ph = dh.pattern[oh];
        int[] offH = dh.offset[ph];
        int sh = dh.start[oh];
        for (int ow = 0; ow < out.w(); ow++) {
          int pw = dw.pattern[ow];
          int[] offW = dw.offset[pw];
          int sw = dw.start[ow];
          int wb = st.combo(pd, ph, pw) * per;
          System.arraycopy(cst, 0, acc, 0, cout);
          for (int ci = 0; ci < cin; ci++) {
            int xc = xb + ci * inPlane;
            for (int a = 0; a < td; a++) {
              int xd = xc + (sd + offD[a]) * inHW;
              for (int bb = 0; bb < th; bb++) {
                int xh = xd + (sh + offH[bb]) * in.w();
                for (int c = 0; c < tw; c++) {
                  float v = x[xh + sw + offW[c]];
                  int wo = wb + (((ci * td + a) * th + bb) * tw + c) * cout;
                  for (int co = 0; co < cout; co++) {
                    acc[co] += v * wts[wo + co];
                  }
                }
              }
            }
          }
          int yo = yb + (od - outD0) * outHW + oh * out.w() + ow;
          for (int co = 0; co < cout; co++) {
            y[yo + co * outPlane] = acc[co];
          }
        }
      }
    });
  }

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

  @Override
  public void avgPool3d(AvgPool3dSpec sp, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
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
    parallel(units, unit -> {
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
}
