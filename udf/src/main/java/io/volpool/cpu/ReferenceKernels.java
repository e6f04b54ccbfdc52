package io.volpool.cpu;

import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedOp;
import io.volpool.op.FusedWeights;
import io.volpool.op.Slab;
import io.volpool.op.VolumeShape;

/**
 * Plain, single-threaded loops that follow PyTorch's definitions literally, accumulating in
 * float64: a full ConvTranspose3d scatter, then the pool. Slow; the yardstick for every other backend.
 */
public final class ReferenceKernels implements VolumeKernels {
  @Override
  public void fused(FusedOp op, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
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

  @Override
  public void avgPool3d(AvgPool3dSpec sp, VolumeShape in, Slab slab, float[] x, int n, float[] y) {
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
