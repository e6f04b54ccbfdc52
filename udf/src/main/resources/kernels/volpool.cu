// volpool CUDA kernels. Built by scripts/build-kernels.sh into volpool.fatbin (sm_90 SASS + PTX for
// compute_75 and later); the exact nvcc command and this file's SHA-256 are recorded in
// volpool.build.txt, and a test fails when they no longer match. Loaded through the driver API
// (JCuda), so every entry point is extern "C". All element indices are 64-bit.
//
// Semantics are PyTorch's (see ../shared/golden/README.md):
//   fused      = ((AvgPool3d_P(ConvTranspose3d(x) * scale1)) + bias) * scale2
//   avgpool3d  = AvgPool3d(kernel, stride, padding, ceil_mode, count_include_pad)
// The fused operator arrives pre-lowered by io.volpool.op.FusedStencil: per dimension, each pooled
// output reads a few input positions ("taps") whose kernel weights were summed ahead of time.

#include <stdint.h>

typedef long long i64;

// ---------------------------------------------------------------------------------------------
// fused, any parameters: one thread per output element, tap tables from FusedStencil.
// tables (ints): startD[OD] patD[OD] offD[nPD*TD] startH[OH] patH[OH] offH[nPH*TH] startW[OW] patW[OW] offW[nPW*TW]
// weights: [combo][ci][a][b][c][co], constant: [co]
extern "C" __global__ void fused_generic(const float* __restrict__ x, float* __restrict__ y, int n, int cin, int cout,
    int D, int H, int W, int OD, int OH, int OW, int TD, int TH, int TW, int nPH, int nPW,
    const int* __restrict__ startD, const int* __restrict__ patD, const int* __restrict__ offD,
    const int* __restrict__ startH, const int* __restrict__ patH, const int* __restrict__ offH,
    const int* __restrict__ startW, const int* __restrict__ patW, const int* __restrict__ offW,
    const float* __restrict__ weights, const float* __restrict__ constant) {
  const i64 total = (i64)n * cout * OD * OH * OW;
  const i64 comboSize = (i64)cin * TD * TH * TW * cout;
  const i64 plane = (i64)D * H * W;
  for (i64 idx = blockIdx.x * (i64)blockDim.x + threadIdx.x; idx < total; idx += (i64)gridDim.x * blockDim.x) {
    i64 t = idx;
    const int ow = (int)(t % OW); t /= OW;
    const int oh = (int)(t % OH); t /= OH;
    const int od = (int)(t % OD); t /= OD;
    const int co = (int)(t % cout);
    const i64 b = t / cout;
    const int pd = patD[od], ph = patH[oh], pw = patW[ow];
    const float* wc = weights + ((i64)(pd * nPH + ph) * nPW + pw) * comboSize;
    float acc = constant[co];
    for (int ci = 0; ci < cin; ci++) {
      const float* xc = x + (b * cin + ci) * plane;
      for (int a = 0; a < TD; a++) {
        const int id = startD[od] + offD[pd * TD + a];
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

template <int CIN, int COUT>
__device__ __forceinline__ void fused_taps2(const float* __restrict__ x, float* __restrict__ y, int n, int D, int H,
    int W, int OD, int OH, int OW, int baseD, int stepD, int baseH, int stepH, int baseW, int stepW,
    const TapWeights<CIN, COUT>& p) {
  const i64 points = (i64)n * OD * OH * OW;
  const i64 plane = (i64)D * H * W;
  const i64 oplane = (i64)OD * OH * OW;
  for (i64 idx = blockIdx.x * (i64)blockDim.x + threadIdx.x; idx < points; idx += (i64)gridDim.x * blockDim.x) {
    i64 t = idx;
    const int ow = (int)(t % OW); t /= OW;
    const int oh = (int)(t % OH); t /= OH;
    const int od = (int)(t % OD);
    const i64 b = t / OD;
    const int id = baseD + od * stepD, ih = baseH + oh * stepH, iw = baseW + ow * stepW;
    float v[CIN][8];
#pragma unroll
    for (int ci = 0; ci < CIN; ci++) {
      const float* xc = x + (b * CIN + ci) * plane + ((i64)id * H + ih) * W + iw;
#pragma unroll
      for (int a = 0; a < 2; a++) {
#pragma unroll
        for (int bb = 0; bb < 2; bb++) {
          const float* r = xc + ((i64)a * H + bb) * W;
          v[ci][(a * 2 + bb) * 2 + 0] = __ldg(r);
          v[ci][(a * 2 + bb) * 2 + 1] = __ldg(r + 1);
        }
      }
    }
    float* yo = y + b * COUT * oplane + ((i64)od * OH + oh) * OW + ow;
#pragma unroll
    for (int co = 0; co < COUT; co++) {
      float acc = p.c[co];
#pragma unroll
      for (int ci = 0; ci < CIN; ci++) {
#pragma unroll
        for (int tap = 0; tap < 8; tap++) {
          acc = fmaf(v[ci][tap], p.w[(ci * 8 + tap) * COUT + co], acc);
        }
      }
      yo[co * oplane] = acc;
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) fused_taps2_c3_c16(const float* __restrict__ x,
    float* __restrict__ y, int n, int D, int H, int W, int OD, int OH, int OW, int baseD, int stepD, int baseH,
    int stepH, int baseW, int stepW, const TapWeights<3, 16> p) {
  fused_taps2<3, 16>(x, y, n, D, H, W, OD, OH, OW, baseD, stepD, baseH, stepH, baseW, stepW, p);
}

// ---------------------------------------------------------------------------------------------
// avgpool3d, any parameters: one thread per output element, PyTorch's window and divisor rules.
extern "C" __global__ void avgpool_generic(const float* __restrict__ x, float* __restrict__ y, i64 nc, int D, int H,
    int W, int OD, int OH, int OW, int k, int s, int p, int countIncludePad) {
  const i64 total = nc * OD * OH * OW;
  for (i64 idx = blockIdx.x * (i64)blockDim.x + threadIdx.x; idx < total; idx += (i64)gridDim.x * blockDim.x) {
    i64 t = idx;
    const int ow = (int)(t % OW); t /= OW;
    const int oh = (int)(t % OH); t /= OH;
    const int od = (int)(t % OD);
    const i64 c = t / OD;
    int d0 = od * s - p, h0 = oh * s - p, w0 = ow * s - p;
    int d1 = min(d0 + k, D + p), h1 = min(h0 + k, H + p), w1 = min(w0 + k, W + p);
    const int poolSize = (d1 - d0) * (h1 - h0) * (w1 - w0);
    d0 = max(d0, 0); h0 = max(h0, 0); w0 = max(w0, 0);
    d1 = min(d1, D); h1 = min(h1, H); w1 = min(w1, W);
    const float* xc = x + c * D * (i64)H * W;
    float sum = 0.f;
    for (int d = d0; d < d1; d++)
      for (int h = h0; h < h1; h++) {
        const float* r = xc + ((i64)d * H + h) * W;
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

__device__ __forceinline__ float rowSum3(const float* __restrict__ row, int ow, int W, int lane) {
  const int c0 = 2 * ow;
  float2 v = make_float2(0.f, 0.f);
  if (c0 < W) v = __ldg(reinterpret_cast<const float2*>(row + c0));
  float left = __shfl_up_sync(0xffffffffu, v.y, 1);
  if (lane == 0) left = (c0 >= 1 && c0 - 1 < W) ? __ldg(row + c0 - 1) : 0.f;
  return left + v.x + v.y;
}

__device__ __forceinline__ float planeSum(const float* __restrict__ plane, int oh, int ow, int H, int W, int lane) {
  const int r0 = 2 * oh - 1;
  float s = 0.f;
#pragma unroll
  for (int r = 0; r < 3; r++) {
    const int h = r0 + r;
    // every lane of the warp shares oh, so the branch is uniform and the shuffle stays legal
    if (h >= 0 && h < H) s += rowSum3(plane + (i64)h * W, ow, W, lane);
  }
  return s;
}

extern "C" __global__ void __launch_bounds__(256) avgpool_k3s2p1(const float* __restrict__ x, float* __restrict__ y,
    i64 nc, int D, int H, int W, int OD, int OH, int OW, int countIncludePad) {
  const int lane = threadIdx.x;  // blockDim = (32, 8)
  const int colBlocks = (OW + 31) / 32;
  const int rowBlocks = (OH + blockDim.y - 1) / blockDim.y;
  const i64 blocks = nc * rowBlocks * colBlocks;
  for (i64 blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    i64 t = blk;
    const int cb = (int)(t % colBlocks); t /= colBlocks;
    const int rb = (int)(t % rowBlocks);
    const i64 c = t / rowBlocks;
    const int ow = cb * 32 + lane;
    const int oh = rb * blockDim.y + threadIdx.y;
    if (oh >= OH) continue;  // whole warp leaves together
    const float* xc = x + c * D * (i64)H * W;
    float* yc = y + c * OD * (i64)OH * OW + (i64)oh * OW + ow;
    const i64 plane = (i64)H * W;
    const float fhw = (float)(padFactor(oh, H, countIncludePad) * padFactor(ow, W, countIncludePad));
    float prev = 0.f;  // plane sum of 2*od - 1 (plane -1 is padding)
    for (int od = 0; od < OD; od++) {
      const int d = 2 * od;
      const float a = d < D ? planeSum(xc + d * plane, oh, ow, H, W, lane) : 0.f;
      const float b = d + 1 < D ? planeSum(xc + (d + 1) * plane, oh, ow, H, W, lane) : 0.f;
      if (ow < OW) yc[(i64)od * OH * OW] = (prev + a + b) / (fhw * (float)padFactor(od, D, countIncludePad));
      prev = b;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// fused then avgpool3d (kernel <= 3) in one pass, the intermediate never written to memory. The
// pool is a box filter and the fused stencil is position-independent (the fast-path conditions
// above, with step 1), so pooling commutes with the stencil: each final output is
//   (sum_ci sum_{a,b,c} Weff[ci][a][b][c][co] * Y_abc(ci) + count * const[co]) / divisor
// where Y_abc is the box sum of the input over the pooled window shifted by the tap offsets.
template <int CIN, int COUT>
__device__ __forceinline__ void pipeline_taps2(const float* __restrict__ x, float* __restrict__ y, int n, int D,
    int H, int W, int FD, int FH, int FW, int PD, int PH, int PW, int baseD, int baseH, int baseW, int k, int s,
    int pad, int ceilMode, int countIncludePad, const TapWeights<CIN, COUT>& p) {
  (void)ceilMode;
  const i64 points = (i64)n * PD * PH * PW;
  const i64 plane = (i64)D * H * W;
  const i64 oplane = (i64)PD * PH * PW;
  for (i64 idx = blockIdx.x * (i64)blockDim.x + threadIdx.x; idx < points; idx += (i64)gridDim.x * blockDim.x) {
    i64 t = idx;
    const int pw = (int)(t % PW); t /= PW;
    const int ph = (int)(t % PH); t /= PH;
    const int pd = (int)(t % PD);
    const i64 b = t / PD;
    // pooled windows over the fused output, PyTorch's rules
    int d0 = pd * s - pad, h0 = ph * s - pad, w0 = pw * s - pad;
    int d1 = min(d0 + k, FD + pad), h1 = min(h0 + k, FH + pad), w1 = min(w0 + k, FW + pad);
    const int poolSize = (d1 - d0) * (h1 - h0) * (w1 - w0);
    d0 = max(d0, 0); h0 = max(h0, 0); w0 = max(w0, 0);
    d1 = min(d1, FD); h1 = min(h1, FH); w1 = min(w1, FW);
    const int nd = d1 - d0, nh = h1 - h0, nw = w1 - w0;  // each in 1..3
    const int cnt = nd * nh * nw;
    const float inv = 1.f / (float)(countIncludePad ? poolSize : cnt);
    const int id = baseD + d0, ih = baseH + h0, iw = baseW + w0;
    float Y[CIN][8];
#pragma unroll
    for (int ci = 0; ci < CIN; ci++) {
      const float* xc = x + (b * CIN + ci) * plane;
      // X[r][q][e]: input block of up to 4x4x4 (window length + 1 per dimension), zero beyond
      float sw[4][4][2];
#pragma unroll
      for (int r = 0; r < 4; r++) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
          float e4[4];
          const bool rowOk = r <= nd && q <= nh;
          const float* row = xc + ((i64)(id + r) * H + (ih + q)) * W + iw;
#pragma unroll
          for (int e = 0; e < 4; e++) e4[e] = (rowOk && e <= nw) ? __ldg(row + e) : 0.f;
          sw[r][q][0] = e4[0] + (nw > 1 ? e4[1] : 0.f) + (nw > 2 ? e4[2] : 0.f);
          sw[r][q][1] = e4[1] + (nw > 1 ? e4[2] : 0.f) + (nw > 2 ? e4[3] : 0.f);
        }
      }
      float sh[4][2][2];
#pragma unroll
      for (int r = 0; r < 4; r++)
#pragma unroll
        for (int bb = 0; bb < 2; bb++)
#pragma unroll
          for (int c = 0; c < 2; c++)
            sh[r][bb][c] = sw[r][bb][c] + (nh > 1 ? sw[r][bb + 1][c] : 0.f) + (nh > 2 ? sw[r][bb + 2][c] : 0.f);
#pragma unroll
      for (int a = 0; a < 2; a++)
#pragma unroll
        for (int bb = 0; bb < 2; bb++)
#pragma unroll
          for (int c = 0; c < 2; c++)
            Y[ci][(a * 2 + bb) * 2 + c] =
                sh[a][bb][c] + (nd > 1 ? sh[a + 1][bb][c] : 0.f) + (nd > 2 ? sh[a + 2][bb][c] : 0.f);
    }
    float* yo = y + b * COUT * oplane + ((i64)pd * PH + ph) * PW + pw;
#pragma unroll
    for (int co = 0; co < COUT; co++) {
      float acc = (float)cnt * p.c[co];
#pragma unroll
      for (int ci = 0; ci < CIN; ci++)
#pragma unroll
        for (int tap = 0; tap < 8; tap++) acc = fmaf(Y[ci][tap], p.w[(ci * 8 + tap) * COUT + co], acc);
      yo[co * oplane] = acc * inv;
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) pipeline_taps2_c3_c16(const float* __restrict__ x,
    float* __restrict__ y, int n, int D, int H, int W, int FD, int FH, int FW, int PD, int PH, int PW, int baseD,
    int baseH, int baseW, int k, int s, int pad, int ceilMode, int countIncludePad, const TapWeights<3, 16> p) {
  pipeline_taps2<3, 16>(x, y, n, D, H, W, FD, FH, FW, PD, PH, PW, baseD, baseH, baseW, k, s, pad, ceilMode,
      countIncludePad, p);
}
