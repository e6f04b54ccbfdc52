// volpool CUDA kernels. Built by scripts/build-kernels.sh into volpool.fatbin (sm_90 SASS + PTX for
// compute_75 and later); the exact nvcc command and this file's SHA-256 are recorded in
// volpool.build.txt, and a test fails when they no longer match. Loaded through the driver API
// (JCuda), so every entry point is extern "C". All element indices are 64-bit.
//
// Semantics are PyTorch's (see ../shared/golden/README.md):
//   fused      = ((AvgPool3d_P(ConvTranspose3d(x) * scale1)) + bias) * scale2
//   avgpool3d  = AvgPool3d(kernel, stride, padding, ceil_mode, count_include_pad)
//   maxpool3d  = MaxPool3d(kernel, stride, padding, dilation, ceil_mode); padded cells never win and a
//                NaN in a window gives NaN (PyTorch's "v > m || isnan(v)")
// The fused operator arrives pre-lowered by io.volpool.op.FusedStencil: per dimension, each pooled
// output reads a few input positions ("taps") whose kernel weights were summed ahead of time.
//
// Slabs: every kernel takes a window along D (io.volpool.op.Slab). Its input buffer holds input
// planes [inD0, inD0 + inDn) of every channel, laid out [n][C][inDn][H][W], and it writes output
// planes [outD0, outD0 + outDn) as [n][C'][outDn][H'][W']. D and OD stay the whole volume's, and
// every index and divisor is computed from whole-volume coordinates, so a window changes where
// values are stored, never the arithmetic: the whole volume is the window (0, D, 0, OD).

#include <stdint.h>
#include <cuda_pipeline.h>

typedef long long i64;

// ---------------------------------------------------------------------------------------------
// fused, any parameters: one thread per output element, tap tables from FusedStencil.
// tables (ints): startD[OD] patD[OD] offD[nPD*TD] startH[OH] patH[OH] offH[nPH*TH] startW[OW] patW[OW] offW[nPW*TW]
// weights: [combo][ci][a][b][c][co], constant: [co]
extern "C" __global__ void fused_generic(const float* __restrict__ x, float* __restrict__ y, int n, int cin, int cout,
    int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn, int TD, int TH, int TW,
    int nPH, int nPW,
    const int* __restrict__ startD, const int* __restrict__ patD, const int* __restrict__ offD,
    const int* __restrict__ startH, const int* __restrict__ patH, const int* __restrict__ offH,
    const int* __restrict__ startW, const int* __restrict__ patW, const int* __restrict__ offW,
    const float* __restrict__ weights, const float* __restrict__ constant) {
  const i64 total = (i64)n * cout * outDn * OH * OW;
  const i64 comboSize = (i64)cin * TD * TH * TW * cout;
  const i64 plane = (i64)inDn * H * W;
  for (i64 idx = blockIdx.x * (i64)blockDim.x + threadIdx.x; idx < total; idx += (i64)gridDim.x * blockDim.x) {
    i64 t = idx;
    const int ow = (int)(t % OW); t /= OW;
    const int oh = (int)(t % OH); t /= OH;
    const int od = outD0 + (int)(t % outDn); t /= outDn;
    const int co = (int)(t % cout);
    const i64 b = t / cout;
    const int pd = patD[od], ph = patH[oh], pw = patW[ow];
    const float* wc = weights + ((i64)(pd * nPH + ph) * nPW + pw) * comboSize;
    float acc = constant[co];
    for (int ci = 0; ci < cin; ci++) {
      const float* xc = x + (b * cin + ci) * plane;
      for (int a = 0; a < TD; a++) {
        const int id = startD[od] + offD[pd * TD + a] - inD0;
        for (int bb = 0; bb < TH; bb++) {
          const int ih = startH[oh] + offH[ph * TH + bb];
          const float* xr = xc + ((i64)id * H + ih) * W;
          for (int c = 0; c < TW; c++) {
            const int iw = startW[ow] + offW[pw * TW + c];
            acc = fmaf(xr[iw], wc[((((i64)ci * TD + a) * TH + bb) * TW + c) * cout + co], acc);
          }
        }
      }
    }
    y[idx] = acc;
  }
}

// ---------------------------------------------------------------------------------------------
// fused fast path: every dimension has one tap pattern of two taps at input offsets {0, 1}, with
// tap 0 of output j at input base + j*step (the reference configuration k=3 s=2 p=1 P=2 has
// base 0, step 1). One thread per output point computes all COUT channels; the effective weights
// travel as a kernel parameter, so they sit in the constant bank and feed FFMA directly.
template <int CIN, int COUT>
struct TapWeights {
  float w[CIN * 8 * COUT];  // [ci][a][b][c][co]
  float c[COUT];
};

// One thread computes two adjacent output columns, all COUT channels. The weights reach FFMA as
// uniform registers (one ULDC each), so sharing every loaded weight between two outputs halves the
// instructions per output; the kernel was issue-bound at one output per thread.
extern "C" __global__ void __launch_bounds__(256) fused_taps2_c3_c16(const float* __restrict__ x,
    float* __restrict__ y, int n, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int baseD, int stepD, int baseH, int stepH, int baseW, int stepW, const TapWeights<3, 16> p) {
  constexpr int CIN = 3, COUT = 16;
  // block (16, 16): 32 output columns (2 per thread) x 16 output rows of one output plane; grid (tiles, outDn, n)
  const int tilesW = (OW + 31) >> 5;
  const int ow = (blockIdx.x % tilesW) * 32 + threadIdx.x * 2;
  const int oh = (blockIdx.x / tilesW) * 16 + threadIdx.y;
  const int od = outD0 + blockIdx.y;
  const i64 b = blockIdx.z;
  if (ow >= OW || oh >= OH) return;
  const bool two = ow + 1 < OW;
  const i64 plane = (i64)inDn * H * W;
  const i64 oplane = (i64)outDn * OH * OW;
  const int id = baseD + od * stepD - inD0, ih = baseH + oh * stepH, iw = baseW + ow * stepW;
  const int iw1 = two ? stepW : 0;  // second column's input offset (re-reads the first when absent)
  float v0[CIN][8], v1[CIN][8];
#pragma unroll
  for (int ci = 0; ci < CIN; ci++) {
    const float* xc = x + (b * CIN + ci) * plane + ((i64)id * H + ih) * W + iw;
#pragma unroll
    for (int a = 0; a < 2; a++) {
#pragma unroll
      for (int bb = 0; bb < 2; bb++) {
        const float* r = xc + ((i64)a * H + bb) * W;
        v0[ci][(a * 2 + bb) * 2 + 0] = __ldg(r);
        v0[ci][(a * 2 + bb) * 2 + 1] = __ldg(r + 1);
        v1[ci][(a * 2 + bb) * 2 + 0] = __ldg(r + iw1);
        v1[ci][(a * 2 + bb) * 2 + 1] = __ldg(r + iw1 + 1);
      }
    }
  }
  float* yo = y + b * COUT * oplane + ((i64)(od - outD0) * OH + oh) * OW + ow;
#pragma unroll
  for (int co = 0; co < COUT; co++) {
    float acc0 = p.c[co], acc1 = p.c[co];
#pragma unroll
    for (int ci = 0; ci < CIN; ci++) {
#pragma unroll
      for (int tap = 0; tap < 8; tap++) {
        const float w = p.w[(ci * 8 + tap) * COUT + co];
        acc0 = fmaf(v0[ci][tap], w, acc0);
        acc1 = fmaf(v1[ci][tap], w, acc1);
      }
    }
    __stcs(yo + co * oplane, acc0);
    if (two) __stcs(yo + co * oplane + 1, acc1);
  }
}

// The same with unit steps in every dimension (the reference configuration): a thread computes a
// 2 x 2 block of outputs (two columns, two output planes). Neighbouring outputs share inputs, so it
// loads 54 distinct values instead of 4 x 24, and every weight feeds four FMAs.
extern "C" __global__ void __launch_bounds__(256) fused_taps2s1_c3_c16(const float* __restrict__ x,
    float* __restrict__ y, int n, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int baseD, int baseH, int baseW, const TapWeights<3, 16> p) {
  constexpr int CIN = 3, COUT = 16;
  // block (16, 16): 32 output columns x 16 output rows x 2 output planes; grid (tiles, ceil(outDn/2), n)
  const int tilesW = (OW + 31) >> 5;
  const int ow = (blockIdx.x % tilesW) * 32 + threadIdx.x * 2;
  const int oh = (blockIdx.x / tilesW) * 16 + threadIdx.y;
  const int od = outD0 + blockIdx.y * 2;
  const i64 b = blockIdx.z;
  if (ow >= OW || oh >= OH) return;
  const bool twoW = ow + 1 < OW, twoD = od + 1 < outD0 + outDn;
  const i64 plane = (i64)inDn * H * W;
  const int id = baseD + od - inD0, ih = baseH + oh, iw = baseW + ow;
  float v[CIN][3][2][3];  // [ci][plane][row][col]; the third plane/column only when the second output exists
#pragma unroll
  for (int ci = 0; ci < CIN; ci++) {
    const float* xc = x + (b * CIN + ci) * plane;
#pragma unroll
    for (int pl = 0; pl < 3; pl++) {
      const int pe = (pl == 2 && !twoD) ? 1 : pl;
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const float* row = xc + ((i64)(id + pe) * H + ih + r) * W + iw;
#pragma unroll
        for (int c = 0; c < 3; c++) v[ci][pl][r][c] = __ldg(row + ((c == 2 && !twoW) ? 1 : c));
      }
    }
  }
  const i64 oplane = (i64)outDn * OH * OW;
  float* yo = y + b * COUT * oplane + ((i64)(od - outD0) * OH + oh) * OW + ow;
#pragma unroll
  for (int co = 0; co < COUT; co++) {
    float a00 = p.c[co], a01 = p.c[co], a10 = p.c[co], a11 = p.c[co];  // [plane][column]
#pragma unroll
    for (int ci = 0; ci < CIN; ci++)
#pragma unroll
      for (int a = 0; a < 2; a++)
#pragma unroll
        for (int bb = 0; bb < 2; bb++)
#pragma unroll
          for (int c = 0; c < 2; c++) {
            const float w = p.w[(ci * 8 + (a * 2 + bb) * 2 + c) * COUT + co];
            a00 = fmaf(v[ci][a][bb][c], w, a00);
            a01 = fmaf(v[ci][a][bb][c + 1], w, a01);
            a10 = fmaf(v[ci][a + 1][bb][c], w, a10);
            a11 = fmaf(v[ci][a + 1][bb][c + 1], w, a11);
          }
    float* o = yo + co * oplane;
    __stcs(o, a00);
    if (twoW) __stcs(o + 1, a01);
    if (twoD) {
      __stcs(o + (i64)OH * OW, a10);
      if (twoW) __stcs(o + (i64)OH * OW + 1, a11);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// avgpool3d, any parameters: one thread per output element, PyTorch's window and divisor rules.
extern "C" __global__ void avgpool_generic(const float* __restrict__ x, float* __restrict__ y, i64 nc, int D, int H,
    int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn, int k, int s, int p, int countIncludePad) {
  const i64 total = nc * outDn * OH * OW;
  for (i64 idx = blockIdx.x * (i64)blockDim.x + threadIdx.x; idx < total; idx += (i64)gridDim.x * blockDim.x) {
    i64 t = idx;
    const int ow = (int)(t % OW); t /= OW;
    const int oh = (int)(t % OH); t /= OH;
    const int od = outD0 + (int)(t % outDn);
    const i64 c = t / outDn;
    int d0 = od * s - p, h0 = oh * s - p, w0 = ow * s - p;
    int d1 = min(d0 + k, D + p), h1 = min(h0 + k, H + p), w1 = min(w0 + k, W + p);
    const int poolSize = (d1 - d0) * (h1 - h0) * (w1 - w0);
    d0 = max(d0, 0); h0 = max(h0, 0); w0 = max(w0, 0);
    d1 = min(d1, D); h1 = min(h1, H); w1 = min(w1, W);
    const float* xc = x + c * inDn * (i64)H * W;
    float sum = 0.f;
    for (int d = d0; d < d1; d++)
      for (int h = h0; h < h1; h++) {
        const float* r = xc + ((i64)(d - inD0) * H + h) * W;
        for (int w = w0; w < w1; w++) sum += r[w];
      }
    const int div = countIncludePad ? poolSize : (d1 - d0) * (h1 - h0) * (w1 - w0);
    y[idx] = sum / (float)div;
  }
}

// ---------------------------------------------------------------------------------------------
// avgpool3d fast path for kernel 3, stride 2, padding 1 and even W: each input byte is read once
// from memory. A warp covers 32 adjacent output columns of one output row; lane ow loads input
// columns (2ow, 2ow+1) as one float2 and gets column 2ow-1 from its left neighbour by shuffle.
// Each thread then marches along D, reusing the last plane of one window as the first of the next.
__device__ __forceinline__ int padFactor(int o, int L, int countIncludePad) {
  const int s = 2 * o - 1;
  const int e = min(s + 3, L + 1);
  return countIncludePad ? e - s : min(s + 3, L) - max(s, 0);
}

// One thread covers 2 output columns (input columns 4q..4q+3, one 16-byte load; column 4q-1 comes
// from the left lane by shuffle) and 2 output rows (5 input rows), so it keeps 10 16-byte loads per
// plane in flight. Loads are predicated, never branched around. Needs W % 4 == 0 (aligned float4).
// The reduction of a pool kernel: avgpool3d sums (and divides at the end), maxpool3d takes PyTorch's
// NaN-propagating max. zero() is what a cell outside the input contributes: padded cells never win.
struct SumOp {
  static __device__ __forceinline__ float zero() { return 0.f; }
  static __device__ __forceinline__ float op(float a, float b) { return a + b; }
  static __device__ __forceinline__ float finish(float v, float div) { return v / div; }
};
struct MaxOp {
  static __device__ __forceinline__ float zero() { return -INFINITY; }
  static __device__ __forceinline__ float op(float m, float v) { return (v > m || isnan(v)) ? v : m; }
  static __device__ __forceinline__ float finish(float v, float) { return v; }
};

template <class R>
__device__ __forceinline__ void rows5x4(const float* __restrict__ plane, bool planeOk, int r0, int H, int W, int c0,
    int lane, float s0[5], float s1[5]) {
  const float z = R::zero();
  float4 v[5];
  float l[5];
#pragma unroll
  for (int r = 0; r < 5; r++) {
    const int h = r0 + r;
    const bool ok = planeOk && h >= 0 && h < H;
    const float* row = plane + (i64)(ok ? h : 0) * W;
    v[r] = (ok && c0 < W) ? __ldg(reinterpret_cast<const float4*>(row + c0)) : make_float4(z, z, z, z);
    l[r] = (ok && lane == 0 && c0 >= 1 && c0 - 1 < W) ? __ldg(row + c0 - 1) : z;
  }
#pragma unroll
  for (int r = 0; r < 5; r++) {
    const float left = __shfl_up_sync(0xffffffffu, v[r].w, 1);
    s0[r] = R::op(R::op(lane == 0 ? l[r] : left, v[r].x), v[r].y);
    s1[r] = R::op(R::op(v[r].y, v[r].z), v[r].w);
  }
}

template <class R>
__device__ __forceinline__ void pool_k3s2p1(const float* __restrict__ x, float* __restrict__ y, i64 nc, int D, int H,
    int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn, int countIncludePad) {
  // block (32, 4): 64 output columns (2 per lane) x 8 output rows (2 per thread); each thread marches along D
  const int inLast = inD0 + inDn - 1;
  const int lane = threadIdx.x;
  const int colBlocks = (OW + 63) / 64;
  const int rowBlocks = (OH + 7) / 8;
  const i64 blocks = nc * rowBlocks * colBlocks;
  for (i64 blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    i64 t = blk;
    const int cb = (int)(t % colBlocks); t /= colBlocks;
    const int rb = (int)(t % rowBlocks);
    const i64 c = t / rowBlocks;
    const int ow = (cb * 32 + lane) * 2;
    const int oh = rb * 8 + threadIdx.y * 2;
    if (oh >= OH) continue;  // whole warp leaves together
    const bool row2 = oh + 1 < OH, col2 = ow + 1 < OW;
    const int c0 = 2 * ow;
    const i64 plane = (i64)H * W;
    const float* xc = x + c * inDn * plane - (i64)inD0 * plane;  // indexed by whole-volume plane
    float* yc = y + c * outDn * (i64)OH * OW + (i64)oh * OW + ow;
    const float fw0 = (float)padFactor(ow, W, countIncludePad);
    const float fw1 = (float)(col2 ? padFactor(ow + 1, W, countIncludePad) : 1);
    const float fh0 = (float)padFactor(oh, H, countIncludePad);
    const float fh1 = (float)(row2 ? padFactor(oh + 1, H, countIncludePad) : 1);
    float p00 = R::zero(), p01 = R::zero(), p10 = R::zero(), p11 = R::zero();  // windows of plane 2*od - 1, [row][col]
    if (outD0 > 0) {
      // a slab after the first: plane 2*outD0 - 1 (in its window) was the last slab's, summed as it did
      float b0[5], b1[5];
      rows5x4<R>(xc + (i64)(2 * outD0 - 1) * plane, true, 2 * oh - 1, H, W, c0, lane, b0, b1);
      p00 = R::op(R::op(b0[0], b0[1]), b0[2]); p01 = R::op(R::op(b1[0], b1[1]), b1[2]);
      p10 = R::op(R::op(b0[2], b0[3]), b0[4]); p11 = R::op(R::op(b1[2], b1[3]), b1[4]);
    }
    for (int od = outD0; od < outD0 + outDn; od++) {
      const int d = 2 * od;
      float a0[5], a1[5], b0[5], b1[5];
      rows5x4<R>(xc + (i64)min(d, inLast) * plane, d < D, 2 * oh - 1, H, W, c0, lane, a0, a1);
      rows5x4<R>(xc + (i64)min(d + 1, inLast) * plane, d + 1 < D, 2 * oh - 1, H, W, c0, lane, b0, b1);
      const float A00 = R::op(R::op(a0[0], a0[1]), a0[2]), A01 = R::op(R::op(a1[0], a1[1]), a1[2]);
      const float A10 = R::op(R::op(a0[2], a0[3]), a0[4]), A11 = R::op(R::op(a1[2], a1[3]), a1[4]);
      const float B00 = R::op(R::op(b0[0], b0[1]), b0[2]), B01 = R::op(R::op(b1[0], b1[1]), b1[2]);
      const float B10 = R::op(R::op(b0[2], b0[3]), b0[4]), B11 = R::op(R::op(b1[2], b1[3]), b1[4]);
      const float fd = (float)padFactor(od, D, countIncludePad);
      float* yo = yc + (i64)(od - outD0) * OH * OW;
      if (ow < OW) {
        __stcs(yo, R::finish(R::op(R::op(p00, A00), B00), fh0 * fw0 * fd));
        if (col2) __stcs(yo + 1, R::finish(R::op(R::op(p01, A01), B01), fh0 * fw1 * fd));
        if (row2) {
          __stcs(yo + OW, R::finish(R::op(R::op(p10, A10), B10), fh1 * fw0 * fd));
          if (col2) __stcs(yo + OW + 1, R::finish(R::op(R::op(p11, A11), B11), fh1 * fw1 * fd));
        }
      }
      p00 = B00; p01 = B01; p10 = B10; p11 = B11;
    }
  }
}

extern "C" __global__ void __launch_bounds__(128) avgpool_k3s2p1(const float* __restrict__ x, float* __restrict__ y,
    i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn,
    int countIncludePad) {
  pool_k3s2p1<SumOp>(x, y, nc, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn, countIncludePad);
}

// maxpool3d kernel 3, stride 2, padding 1, dilation 1 (any ceil_mode): the same one-read kernel with
// PyTorch's max; cells outside the input are -inf, so they never win.
extern "C" __global__ void __launch_bounds__(128) maxpool_k3s2p1(const float* __restrict__ x, float* __restrict__ y,
    i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn) {
  pool_k3s2p1<MaxOp>(x, y, nc, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn, 1);
}

// ---------------------------------------------------------------------------------------------
// maxpool3d, any parameters: one thread per output element, the window's cells dilation apart,
// scanned in PyTorch's order (D, H, W) from -inf.
extern "C" __global__ void maxpool_generic(const float* __restrict__ x, float* __restrict__ y, i64 nc, int D, int H,
    int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn, int k, int s, int p, int dil) {
  const i64 total = nc * outDn * OH * OW;
  for (i64 idx = blockIdx.x * (i64)blockDim.x + threadIdx.x; idx < total; idx += (i64)gridDim.x * blockDim.x) {
    i64 t = idx;
    const int ow = (int)(t % OW); t /= OW;
    const int oh = (int)(t % OH); t /= OH;
    const int od = outD0 + (int)(t % outDn);
    const i64 c = t / outDn;
    const float* xc = x + c * inDn * (i64)H * W;
    float m = -INFINITY;
    for (int a = 0; a < k; a++) {
      const int d = od * s - p + a * dil;
      if (d < 0 || d >= D) continue;
      for (int b = 0; b < k; b++) {
        const int h = oh * s - p + b * dil;
        if (h < 0 || h >= H) continue;
        const float* r = xc + ((i64)(d - inD0) * H + h) * W;
        for (int e = 0; e < k; e++) {
          const int w = ow * s - p + e * dil;
          if (w < 0 || w >= W) continue;
          m = MaxOp::op(m, r[w]);
        }
      }
    }
    y[idx] = m;
  }
}

// ---------------------------------------------------------------------------------------------
// fused then avgpool3d (kernel <= 3) in one pass, the intermediate never written to memory. The
// pool is a box filter and the fused stencil is position-independent (the fast-path conditions
// above, with step 1), so pooling commutes with the stencil: each final output is
//   (sum_ci sum_{a,b,c} Weff[ci][a][b][c][co] * Y_abc(ci) + count * const[co]) / divisor
// where Y_abc is the box sum of the input over the pooled window shifted by the tap offsets.
// A block computes a tile of TW x TH final outputs (blockDim) in two consecutive final planes pd0,
// pd0+1 of one volume; each thread computes the same (ph, pw) in both planes, sharing every weight
// (one ULDC each) between two outputs. The block first stages, for every channel, the NP = s + k + 1
// input planes, R = (TH-1)*s + k + 1 rows and C columns (a multiple of 4, the origin aligned down to
// 16 bytes) those outputs read, with 16-byte asynchronous copies that zero-fill outside the input.
// Windows clipped at the borders are handled with 0/1 masks rather than branches, so the warps
// never diverge. Needs W % 4 == 0 (16-byte aligned rows) and R*C/4 <= 4 * threads.
constexpr int PIPE_SLOTS = 4;
constexpr int PIPE_MAX_PLANES = 7;

extern "C" __global__ void __launch_bounds__(256, 2) pipeline_taps2_c3_c16(const float* __restrict__ x,
    float* __restrict__ y, int n, int D, int H, int W, int FD, int FH, int FW, int PD, int PH, int PW, int inD0,
    int inDn, int outD0, int outDn, int baseD, int baseH, int baseW, int k, int s, int pad, int ceilMode,
    int countIncludePad, const TapWeights<3, 16> p) {
  constexpr int CIN = 3, COUT = 16;
  extern __shared__ float4 smem4[];
  float* tile = reinterpret_cast<float*>(smem4);
  (void)ceilMode;
  const int TW = blockDim.x, TH = blockDim.y, nthreads = TW * TH, tid = threadIdx.y * TW + threadIdx.x;
  const int NP = s + k + 1, R = (TH - 1) * s + k + 1;
  const int tilesW = (PW + TW - 1) / TW;
  const int tw0 = (blockIdx.x % tilesW) * TW, th0 = (blockIdx.x / tilesW) * TH;
  const int pd0 = outD0 + blockIdx.y * 2;
  const i64 b = blockIdx.z;
  const int fd0 = pd0 * s - pad, fh0 = th0 * s - pad, fw0 = tw0 * s - pad;
  const int oD = baseD + fd0, oH = baseH + fh0, oWn = baseW + fw0;
  const int oW = oWn >= 0 ? (oWn & ~3) : -((3 - oWn) & ~3);  // aligned down to a multiple of 4
  const int shift = oWn - oW;
  const int CH = ((TW - 1) * s + k + 1 + shift + 3) >> 2, C = CH * 4;
  // this thread's staging slots: (row, 16-byte chunk) pairs of one staged plane
  int soff[PIPE_SLOTS], sdst[PIPE_SLOTS], sbytes[PIPE_SLOTS];
#pragma unroll
  for (int j = 0; j < PIPE_SLOTS; j++) {
    const int idx = tid + j * nthreads;
    const int r = idx / CH, c = idx - r * CH;
    const int gh = oH + r, gw = oW + 4 * c;
    const bool ok = r < R && gh >= 0 && gh < H && gw >= 0 && gw < W;
    sbytes[j] = ok ? min(16, (W - gw) * 4) : 0;
    soff[j] = ok ? gh * W + gw : 0;
    sdst[j] = r < R ? r * C + 4 * c : -1;
  }
  const i64 plane = (i64)H * W;
  for (int ci = 0; ci < CIN; ci++) {
    for (int pl = 0; pl < NP; pl++) {
      // planes outside the slab's window (inside [0, D)) are read by no output of the slab: staged as zeros
      const int gd = oD + pl;
      const bool dOk = gd >= inD0 && gd < inD0 + inDn;
      const float* src = x + ((b * CIN + ci) * inDn + (dOk ? gd - inD0 : 0)) * plane;
      float* dst = tile + (ci * NP + pl) * R * C;
#pragma unroll
      for (int j = 0; j < PIPE_SLOTS; j++) {
        if (sdst[j] >= 0) {
          const int bytes = dOk ? sbytes[j] : 0;
          __pipeline_memcpy_async(dst + sdst[j], bytes ? src + soff[j] : x, 16, 16 - bytes);
        }
      }
    }
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  const int pw = tw0 + threadIdx.x, ph = th0 + threadIdx.y;
  if (pw >= PW || ph >= PH) return;
  const bool two = pd0 + 1 < outD0 + outDn;
  // pooled windows over the fused output, PyTorch's rules; h and w are shared by both points
  int h0 = ph * s - pad, w0 = pw * s - pad;
  int h1 = min(h0 + k, FH + pad), w1 = min(w0 + k, FW + pad);
  const int hw = (h1 - h0) * (w1 - w0);
  h0 = max(h0, 0); w0 = max(w0, 0); h1 = min(h1, FH); w1 = min(w1, FW);
  const int nh = h1 - h0, nw = w1 - w0;
  const int th = h0 - fh0, tw = w0 - fw0 + shift;  // window start in the tile
  int dstart[2], nd[2];
  float inv[2], cnt[2];
#pragma unroll
  for (int i = 0; i < 2; i++) {
    int d0 = (pd0 + i) * s - pad;
    int d1 = min(d0 + k, FD + pad);
    const int poolSize = (d1 - d0) * hw;
    d0 = max(d0, 0);
    d1 = min(d1, FD);
    nd[i] = max(d1 - d0, 0);
    dstart[i] = d0 - fd0;
    cnt[i] = (float)(nd[i] * nh * nw);
    inv[i] = 1.f / (float)(countIncludePad ? poolSize : max(nd[i] * nh * nw, 1));
  }
  float mh[2][4], mw[2][4];
  int rowOff[4], colOff[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
#pragma unroll
    for (int a = 0; a < 2; a++) {
      mh[a][j] = (j >= a && j < a + nh) ? 1.f : 0.f;
      mw[a][j] = (j >= a && j < a + nw) ? 1.f : 0.f;
    }
    rowOff[j] = min(th + j, R - 1) * C;  // clamped inside the tile: masked cells are finite, times zero
    colOff[j] = min(tw + j, C - 1);
  }
  float acc0[COUT], acc1[COUT];
#pragma unroll
  for (int co = 0; co < COUT; co++) {
    acc0[co] = cnt[0] * p.c[co];
    acc1[co] = cnt[1] * p.c[co];
  }
#pragma unroll
  for (int ci = 0; ci < CIN; ci++) {
    float Y0[8], Y1[8];
#pragma unroll
    for (int t = 0; t < 8; t++) { Y0[t] = 0.f; Y1[t] = 0.f; }
#pragma unroll
    for (int pl = 0; pl < PIPE_MAX_PLANES; pl++) {
      if (pl >= NP) break;
      const float* tp = tile + (ci * NP + pl) * R * C;
      float sh[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const float* row = tp + rowOff[j];
        float s0 = 0.f, s1 = 0.f;
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const float v = row[colOff[e]];
          s0 = fmaf(v, mw[0][e], s0);
          s1 = fmaf(v, mw[1][e], s1);
        }
#pragma unroll
        for (int bb = 0; bb < 2; bb++) {
          sh[bb][0] = fmaf(s0, mh[bb][j], sh[bb][0]);
          sh[bb][1] = fmaf(s1, mh[bb][j], sh[bb][1]);
        }
      }
      // plane pl is tap a of point i when dstart[i] + a <= pl < dstart[i] + a + nd[i]
#pragma unroll
      for (int a = 0; a < 2; a++) {
        const float m0 = (pl >= dstart[0] + a && pl < dstart[0] + a + nd[0]) ? 1.f : 0.f;
        const float m1 = (pl >= dstart[1] + a && pl < dstart[1] + a + nd[1]) ? 1.f : 0.f;
#pragma unroll
        for (int bb = 0; bb < 2; bb++)
#pragma unroll
          for (int c = 0; c < 2; c++) {
            Y0[(a * 2 + bb) * 2 + c] = fmaf(sh[bb][c], m0, Y0[(a * 2 + bb) * 2 + c]);
            Y1[(a * 2 + bb) * 2 + c] = fmaf(sh[bb][c], m1, Y1[(a * 2 + bb) * 2 + c]);
          }
      }
    }
#pragma unroll
    for (int tap = 0; tap < 8; tap++)
#pragma unroll
      for (int co = 0; co < COUT; co++) {
        const float w = p.w[(ci * 8 + tap) * COUT + co];
        acc0[co] = fmaf(Y0[tap], w, acc0[co]);
        acc1[co] = fmaf(Y1[tap], w, acc1[co]);
      }
  }
  const i64 oplane = (i64)outDn * PH * PW;
  float* yo = y + b * COUT * oplane + ((i64)(pd0 - outD0) * PH + ph) * PW + pw;
#pragma unroll
  for (int co = 0; co < COUT; co++) {
    __stcs(yo + co * oplane, acc0[co] * inv[0]);
    if (two) __stcs(yo + co * oplane + (i64)PH * PW, acc1[co] * inv[1]);
  }
}

// ---------------------------------------------------------------------------------------------
// The output dtype: float32 results narrowed as io.volpool.format.Narrow does it on the host (and
// PyTorch's CPU .to(torch.float16) / .to(torch.bfloat16)), bit for bit: round to nearest even,
// float16 overflow to infinity, NaN to 0x7e00 with its sign (float16) and to 0xffff (bfloat16).
// __fmul_rn/__fadd_rn keep nvcc from contracting the float16 steps into one FMA (which rounds once).
extern "C" __global__ void narrow_f16(const float* __restrict__ x, unsigned short* __restrict__ y, i64 count) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < count; i += (i64)gridDim.x * blockDim.x) {
    const float f = x[i];
    const uint32_t w = __float_as_uint(f);
    const uint32_t shl1 = w + w;
    const uint32_t sign = w & 0x80000000u;
    if (shl1 > 0xff000000u) {
      y[i] = (unsigned short)((sign >> 16) | 0x7e00u);
      continue;
    }
    float base = __fmul_rn(__fmul_rn(fabsf(f), 0x1.0p+112f), 0x1.0p-110f);
    uint32_t bias = shl1 & 0xff000000u;
    if (bias < 0x71000000u) {
      bias = 0x71000000u;
    }
    base = __fadd_rn(__uint_as_float((bias >> 1) + 0x07800000u), base);
    const uint32_t bits = __float_as_uint(base);
    y[i] = (unsigned short)((sign >> 16) | (((bits >> 13) & 0x7c00u) + (bits & 0x0fffu)));
  }
}

extern "C" __global__ void narrow_bf16(const float* __restrict__ x, unsigned short* __restrict__ y, i64 count) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < count; i += (i64)gridDim.x * blockDim.x) {
    const float f = x[i];
    const uint32_t u = __float_as_uint(f);
    y[i] = f != f ? (unsigned short)0xffffu : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
}

// ---------------------------------------------------------------------------------------------
// The input dtype: a batch of 8- or 16-bit volumes arrives at its stored width (half or a quarter of
// the bytes over the host's memory and the bus) and is widened here into the float32 input buffer,
// bit for bit as io.volpool.format.ValueType does on the host (PyTorch's .to(torch.float32)), then
// rescaled as value * slope + intercept in two roundings (volume v's pair in rescale[v]; the pair
// (1, +0) leaves values untouched, so -0.0 stays -0.0). type: 0 uint8, 1 int8, 2 uint16, 3 int16,
// 4 float16, 5 bfloat16; swap: 16-bit elements stored big-endian. grid (blocks, volumes).
__device__ __forceinline__ float f16_to_f32(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = (float)mant * 0x1p-24f;  // zero or subnormal, exact
    return sign ? -v : v;
  }
  if (exp == 0x1f) {  // infinities; NaN quiet with its payload
    return __uint_as_float(sign | 0x7f800000u | (mant == 0 ? 0u : 0x400000u | (mant << 13)));
  }
  return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

extern "C" __global__ void widen(const unsigned char* __restrict__ x, float* __restrict__ y, i64 numel, int type,
    int swap, const float2* __restrict__ rescale) {
  const i64 v = blockIdx.y;
  const float2 r = rescale[v];
  const bool id = __float_as_uint(r.x) == 0x3f800000u && __float_as_uint(r.y) == 0u;
  const int size = type < 2 ? 1 : 2;
  const unsigned char* xv = x + v * numel * size;
  float* yv = y + v * numel;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < numel; i += (i64)gridDim.x * blockDim.x) {
    uint32_t u;
    if (size == 1) {
      u = xv[i];
    } else {
      u = reinterpret_cast<const unsigned short*>(xv)[i];
      if (swap) u = ((u & 0xffu) << 8) | (u >> 8);
    }
    float f;
    switch (type) {
      case 0: f = (float)u; break;
      case 1: f = (float)(int)(signed char)u; break;
      case 2: f = (float)u; break;
      case 3: f = (float)(int)(short)u; break;
      case 4: f = f16_to_f32(u); break;
      default: f = __uint_as_float(u << 16); break;
    }
    yv[i] = id ? f : __fadd_rn(__fmul_rn(f, r.x), r.y);
  }
}
