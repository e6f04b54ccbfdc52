package io.volpool.ops.fused;

import io.volpool.op.Parallel;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;

/** fused on the CPU: the stencil kernel and the float64 reference loops. Stateless. */
final class FusedCpu {
  private FusedCpu() {}

  /**
   * Runs the precomputed {@link FusedStencil} (a few taps per dimension instead of a full transposed
   * convolution), all output channels of a point accumulated together so each input value is loaded
   * once per tap; work split over (volume, output plane).
   */
  static void fast(FusedOp op, Parallel par, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
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
    par.forEach(n * units, unit -> {
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

  /** PyTorch's definition as plain loops in float64: a full ConvTranspose3d scatter, then the pool. */
  static void reference(FusedOp op, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
    VolumeShape cs = op.convShape(in);
    VolumeShape out = op.outputShape(in);
    FusedWeights fw = op.weights();
    int k = fw.kernel();
    int s = op.stride();
    int p = op.padding();
    int pk = op.poolKernel();
    // the conv planes the slab's pooled outputs average, [cz0, cz0 + czn); the scatter below keeps
    // only those, in the whole volume's order, so each value is the same sum
    int cz0 = slab.outD0() * pk;
    int czn = slab.outDn() * pk;
    long cplane = (long) cs.h() * cs.w();
    double[] conv = new double[(int) (cs.c() * czn * cplane)];
    long inVol = (long) in.c() * slab.inDn() * in.h() * in.w();
    long outVol = (long) out.c() * slab.outDn() * out.h() * out.w();
    for (int b = 0; b < n; b++) {
      int xb = (int) (b * inVol);
      for (int co = 0; co < cs.c(); co++) {
        java.util.Arrays.fill(conv, (int) (co * czn * cplane), (int) ((co + 1) * czn * cplane), fw.convBias()[co]);
      }
      for (int ci = 0; ci < in.c(); ci++) {
        for (int id = slab.inD0(); id < slab.inD1(); id++) {
          for (int ih = 0; ih < in.h(); ih++) {
            for (int iw = 0; iw < in.w(); iw++) {
              double v = x[xb + ((ci * slab.inDn() + id - slab.inD0()) * in.h() + ih) * in.w() + iw];
              for (int co = 0; co < cs.c(); co++) {
                for (int kd = 0; kd < k; kd++) {
                  int od = id * s - p + kd - cz0;
                  if (od < 0 || od >= czn) {
                    continue;
                  }
                  for (int kh = 0; kh < k; kh++) {
                    int oh = ih * s - p + kh;
                    if (oh < 0 || oh >= cs.h()) {
                      continue;
                    }
                    for (int kw = 0; kw < k; kw++) {
                      int ow = iw * s - p + kw;
                      if (ow < 0 || ow >= cs.w()) {
                        continue;
                      }
                      conv[((co * czn + od) * cs.h() + oh) * cs.w() + ow] += v * fw.w(ci, co, kd, kh, kw);
                    }
                  }
                }
              }
            }
          }
        }
      }
      int yb = (int) (b * outVol);
      for (int co = 0; co < out.c(); co++) {
        for (int od = 0; od < slab.outDn(); od++) {
          for (int oh = 0; oh < out.h(); oh++) {
            for (int ow = 0; ow < out.w(); ow++) {
              double sum = 0;
              for (int a = 0; a < pk; a++) {
                for (int bb = 0; bb < pk; bb++) {
                  for (int c = 0; c < pk; c++) {
                    sum += conv[((co * czn + od * pk + a) * cs.h() + oh * pk + bb) * cs.w() + ow * pk + c]
                        * (double) fw.scale1();
                  }
                }
              }
              double avg = sum / (pk * pk * pk);
              y[yb + ((co * slab.outDn() + od) * out.h() + oh) * out.w() + ow] =
                  (float) ((avg + fw.bias()[co]) * fw.scale2());
            }
          }
        }
      }
    }
  }
}
