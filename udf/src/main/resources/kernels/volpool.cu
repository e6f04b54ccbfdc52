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
// Values as the kernels load them: float32, or 8- and 16-bit values as the volume stored them (half
// or a quarter of float32's bytes from memory and over the bus), widened as they are loaded bit for
// bit as io.volpool.format.ValueType widens them on the host (PyTorch's .to(torch.float32)), then
// rescaled as value * slope + intercept in two roundings (the pair (1, +0) leaves values untouched,
// so -0.0 stays -0.0). get() takes the element's bits, zero-extended.
struct LoadF32 {
  typedef float T;
  static constexpr int BYTES = 4;
  static constexpr bool RESCALES = false;
  static __device__ __forceinline__ float get(uint32_t u) { return __uint_as_float(u); }
};
// Integers of up to 16 bits become float32 exactly by placing them in the mantissa of 2^23 (offset to
// unsigned) and subtracting: one logic op and one add at full rate, where I2F runs at a quarter of it.
struct LoadU8 {
  typedef unsigned char T;
  static constexpr int BYTES = 1;
  static constexpr bool RESCALES = true;
  static __device__ __forceinline__ float get(uint32_t u) { return __uint_as_float(0x4b000000u | u) - 8388608.f; }
};
struct LoadI8 {
  typedef signed char T;
  static constexpr int BYTES = 1;
  static constexpr bool RESCALES = true;
  static __device__ __forceinline__ float get(uint32_t u) {
    return __uint_as_float(0x4b000000u | (u ^ 0x80u)) - 8388736.f;
  }
};
struct LoadU16 {
  typedef unsigned short T;
  static constexpr int BYTES = 2;
  static constexpr bool RESCALES = true;
  static __device__ __forceinline__ float get(uint32_t u) { return __uint_as_float(0x4b000000u | u) - 8388608.f; }
};
struct LoadI16 {
  typedef short T;
  static constexpr int BYTES = 2;
  static constexpr bool RESCALES = true;
  static __device__ __forceinline__ float get(uint32_t u) {
    return __uint_as_float(0x4b000000u | (u ^ 0x8000u)) - 8421376.f;
  }
};
// float16 without branches: exponent and mantissa shifted into float32's and scaled by 2^112 (exact for
// normal and subnormal values; zero stays zero), infinities and NaN (quiet, its payload kept) selected.
struct LoadF16 {
  typedef unsigned short T;
  static constexpr int BYTES = 2;
  static constexpr bool RESCALES = true;
  static __device__ __forceinline__ float get(uint32_t u) {
    const uint32_t m = u & 0x7fffu;
    const uint32_t finite = __float_as_uint(__fmul_rn(__uint_as_float(m << 13), 0x1p112f));
    const uint32_t special = 0x7f800000u | (m == 0x7c00u ? 0u : 0x400000u | ((m & 0x3ffu) << 13));
    return __uint_as_float(((u & 0x8000u) << 16) | (m >= 0x7c00u ? special : finite));
  }
};
// float16 by the hardware's conversion (one instruction; exact for every finite value, infinities
// kept): for sums, whose NaN is the canonical one whatever the payload of the NaN that went in.
__device__ __forceinline__ float f16ToF32(uint32_t u) {
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)u));
  return f;
#else
  return LoadF16::get(u & 0xffffu);
#endif
}
struct LoadF16Cvt {
  typedef unsigned short T;
  static constexpr int BYTES = 2;
  static constexpr bool RESCALES = true;
  static __device__ __forceinline__ float get(uint32_t u) { return f16ToF32(u); }
};
struct LoadBF16 {
  typedef unsigned short T;
  static constexpr int BYTES = 2;
  static constexpr bool RESCALES = true;
  static __device__ __forceinline__ float get(uint32_t u) { return __uint_as_float(u << 16); }
};

/** A volume's rescale: value * slope + intercept in two roundings, none for the identity pair. */
struct Rescaler {
  float slope, intercept;
  bool identity;
  __device__ __forceinline__ float operator()(float f) const {
    return identity ? f : apply(f);
  }
  __device__ __forceinline__ float apply(float f) const { return __fadd_rn(__fmul_rn(f, slope), intercept); }
  /**
   * Whether rescaling keeps the order of values, ties included, so that the maximum of the rescaled
   * values is the rescaled maximum bit for bit: the identity, or a finite slope of at least 2^-100 (no
   * product of a non-zero value underflows to a zero) with a finite intercept.
   */
  __device__ __forceinline__ bool monotone() const {
    return identity || (slope >= 0x1p-100f && slope <= 3.4028235e38f && fabsf(intercept) <= 3.4028235e38f);
  }
};

template <class L>
__device__ __forceinline__ Rescaler rescalerOf(const float2* __restrict__ rescale, i64 volume) {
  if (!L::RESCALES) {
    return Rescaler{1.f, 0.f, true};
  }
  const float2 r = rescale[volume];
  return Rescaler{r.x, r.y, __float_as_uint(r.x) == 0x3f800000u && __float_as_uint(r.y) == 0u};
}

#ifndef VOLPOOL_POOL_CACHE
#define VOLPOOL_POOL_CACHE __ldg
#endif

/** The raw words of E elements of L's type: one aligned 4-, 8- or 16-byte load per 16 bytes. */
template <class L, int E>
struct RawRow {
  uint32_t w[E * L::BYTES / 4];
};

template <class L, int E>
__device__ __forceinline__ void loadRaw(const typename L::T* __restrict__ p, RawRow<L, E>& r) {
  constexpr int NB = E * L::BYTES;
  if constexpr (NB == 4) {
    r.w[0] = VOLPOOL_POOL_CACHE(reinterpret_cast<const unsigned int*>(p));
  } else if constexpr (NB == 8) {
    const uint2 v = VOLPOOL_POOL_CACHE(reinterpret_cast<const uint2*>(p));
    r.w[0] = v.x;
    r.w[1] = v.y;
  } else {
#pragma unroll
    for (int q = 0; q < NB / 16; q++) {
      const uint4 v = VOLPOOL_POOL_CACHE(reinterpret_cast<const uint4*>(p) + q);
      r.w[4 * q] = v.x;
      r.w[4 * q + 1] = v.y;
      r.w[4 * q + 2] = v.z;
      r.w[4 * q + 3] = v.w;
    }
  }
}

/** Element i of a raw row, widened. */
template <class L, int E>
__device__ __forceinline__ float widenRaw(const RawRow<L, E>& r, int i) {
  if constexpr (L::BYTES == 4) {
    return L::get(r.w[i]);
  } else if constexpr (L::BYTES == 2) {
    return L::get((r.w[i >> 1] >> ((i & 1) * 16)) & 0xffffu);
  } else {
    return L::get((r.w[i >> 2] >> ((i & 3) * 8)) & 0xffu);
  }
}

/** One element of L's type at p, its bits zero-extended. */
template <class L>
__device__ __forceinline__ uint32_t loadOneRaw(const typename L::T* __restrict__ p) {
  if constexpr (L::BYTES == 4) {
    return __ldg(reinterpret_cast<const unsigned int*>(p));
  } else if constexpr (L::BYTES == 2) {
    return __ldg(reinterpret_cast<const unsigned short*>(p));
  } else {
    return __ldg(reinterpret_cast<const unsigned char*>(p));
  }
}

// ---------------------------------------------------------------------------------------------
// avgpool3d and maxpool3d fast path for kernel 3, stride 2, padding 1: each input byte is read once
// from memory. A warp covers 32 * E input columns of one row: each lane loads E adjacent columns in
// one aligned load (16 bytes for float32 and 16-bit values; needs W % E == 0) and gets the column to
// their left from its left neighbour by shuffle (lane 0 loads it). A thread covers E/2 output
// columns and 2 output rows (5 input rows), and marches along D, reusing the last plane of one
// window as the first of the next. Loads are predicated, never branched around.
__device__ __forceinline__ int padFactor(int o, int L, int countIncludePad) {
  const int s = 2 * o - 1;
  const int e = min(s + 3, L + 1);
  return countIncludePad ? e - s : min(s + 3, L) - max(s, 0);
}

// The reduction of a pool kernel: avgpool3d sums (and multiplies by its divisor's reciprocal at the
// end), maxpool3d takes PyTorch's NaN-propagating max. zero() is what a cell outside the input
// contributes: padded cells never win.
struct SumOp {
  static __device__ __forceinline__ float zero() { return 0.f; }
  static __device__ __forceinline__ float op(float a, float b) { return a + b; }
  static __device__ __forceinline__ float finish(float v, float inv) { return v * inv; }
  /**
   * v / d correctly rounded (PyTorch's quotient, and the CPU backend's) from r = RN(1/d): the product, then
   * one correction with the exact remainder (Markstein: r within half an ulp of 1/d and the product within
   * one ulp of v/d give RN(v/d), for a normal quotient: a subnormal one is divided); an infinite or NaN sum
   * keeps the product.
   */
  static __device__ __forceinline__ float divide(float v, float d, float r) {
    const float q = __fmul_rn(v, r);
    if (fabsf(q) < 0x1p-126f) {
      return __fdiv_rn(v, d);  // a subnormal quotient, where the correction can round differently
    }
    const float rem = __fmaf_rn(-q, d, v);
    return rem == rem ? __fmaf_rn(rem, r, q) : q;
  }
};
struct MaxOp {
  static __device__ __forceinline__ float zero() { return -INFINITY; }
  static __device__ __forceinline__ float op(float m, float v) { return (v > m || isnan(v)) ? v : m; }
  static __device__ __forceinline__ float finish(float v, float) { return v; }
  static __device__ __forceinline__ float divide(float v, float, float) { return v; }
};

/**
 * Input rows r0..r0+NR-1 of one plane, reduced along W: s[r][j] is the window of output column j
 * of this lane (input columns c0 + 2j - 1 .. c0 + 2j + 1). Cells outside the input are R::zero().
 * All the rows' loads are issued first, as raw words (fewer registers than widened values); each row
 * is then widened, rescaled and reduced.
 */
template <class R, class L, int E, int NR>
__device__ __forceinline__ void rowsOf(const typename L::T* __restrict__ plane, bool planeOk, int r0, int H, int W,
    int c0, int lane, const Rescaler& rs, float (&s)[NR][E / 2]) {
  const float z = R::zero();
  RawRow<L, E> raw[NR];
  uint32_t leftRaw[NR];
  bool in[NR], leftIn[NR];
#pragma unroll
  for (int r = 0; r < NR; r++) {
    const int h = r0 + r;
    const bool ok = planeOk && h >= 0 && h < H;
    const typename L::T* row = plane + (i64)(ok ? h : 0) * W;
    in[r] = ok && c0 < W;
    leftIn[r] = ok && lane == 0 && c0 >= 1 && c0 - 1 < W;
    if (in[r]) {
      loadRaw<L, E>(row + c0, raw[r]);
    } else {
#pragma unroll
      for (int q = 0; q < E * L::BYTES / 4; q++) raw[r].w[q] = 0;
    }
    leftRaw[r] = leftIn[r] ? loadOneRaw<L>(row + c0 - 1) : 0u;
  }
#pragma unroll
  for (int r = 0; r < NR; r++) {
    float e[E];
#pragma unroll
    for (int i = 0; i < E; i++) e[i] = in[r] ? rs(widenRaw<L, E>(raw[r], i)) : z;
    const float left = __shfl_up_sync(0xffffffffu, e[E - 1], 1);
    const float prev = lane == 0 ? (leftIn[r] ? rs(L::get(leftRaw[r])) : z) : left;
#pragma unroll
    for (int j = 0; j < E / 2; j++) {
      s[r][j] = R::op(R::op(j == 0 ? prev : e[2 * j - 1], e[2 * j]), e[2 * j + 1]);
    }
  }
}

/** OC consecutive outputs at y (aligned to OC floats when vec): one vector store, or one store each. */
template <int OC>
__device__ __forceinline__ void storeRow(float* __restrict__ y, const float (&v)[OC], bool vec, int valid) {
  if constexpr (OC == 2) {
    if (vec) {
      if (valid >= 2) __stcs(reinterpret_cast<float2*>(y), make_float2(v[0], v[1]));
      return;
    }
  } else if constexpr (OC == 4) {
    if (vec) {
      if (valid >= 4) __stcs(reinterpret_cast<float4*>(y), make_float4(v[0], v[1], v[2], v[3]));
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < OC; j++) {
    if (j < valid) __stcs(y + j, v[j]);
  }
}

#ifdef VOLPOOL_POOL_MIN_BLOCKS
#define VOLPOOL_POOL_LAUNCH __launch_bounds__(128, VOLPOOL_POOL_MIN_BLOCKS)
#else
#define VOLPOOL_POOL_LAUNCH __launch_bounds__(128)
#endif

#ifndef VOLPOOL_POOL_ROWS
#define VOLPOOL_POOL_ROWS 2
#endif

/** The geometry of one block of the one-read pools: (32, 4) threads over 32 * OC output columns x 4 * ROWS rows. */
struct PoolBlock {
  i64 c;       // channel plane (volume * C + channel)
  int oh, ow;  // this thread's first output row and column
};

template <int OC, int ROWS>
__device__ __forceinline__ PoolBlock poolBlockOf(i64 blk, int OH, int OW) {
  const int colBlocks = (OW + 32 * OC - 1) / (32 * OC);
  const int rowBlocks = (OH + 4 * ROWS - 1) / (4 * ROWS);
  i64 t = blk;
  const int cb = (int)(t % colBlocks); t /= colBlocks;
  const int rb = (int)(t % rowBlocks);
  return PoolBlock{t / rowBlocks, rb * 4 * ROWS + (int)threadIdx.y * ROWS, (cb * 32 + (int)threadIdx.x) * OC};
}

/** One block of the one-read k3 s2 p1 pool (see pool_k3s2p1). */
template <class R, class L, int E, int ROWS>
__device__ __forceinline__ void poolBlock(const PoolBlock& pb, const typename L::T* __restrict__ x, float* __restrict__ y,
    int D, int H, int W, int OH, int OW, int inD0, int inDn, int outD0, int outDn, int countIncludePad,
    const Rescaler& rs) {
  constexpr int OC = E / 2;         // output columns per lane
  constexpr int NR = 2 * ROWS + 1;  // input rows per plane
  const int inLast = inD0 + inDn - 1;
  const int lane = threadIdx.x;
  const int oh = pb.oh, ow = pb.ow;
  const i64 c = pb.c;
  const bool vec = OW % OC == 0;  // every row's outputs of a lane aligned for one vector store
  const int c0 = 2 * ow;
  const int valid = min(OC, OW - ow);
  const i64 plane = (i64)H * W;
  const typename L::T* xc = x + c * inDn * plane - (i64)inD0 * plane;  // indexed by whole-volume plane
  float* yc = y + c * outDn * (i64)OH * OW + (i64)oh * OW + ow;
  // an average's divisor is (H factor) x (W factor) x (D factor): the first two per thread, the last per plane
  // (the H and W factors, 1 to 3, packed 4 bits each into one register: fewer registers, no spills). Where all
  // three are 3 (every window with count_include_pad, the inner ones without) the reciprocal is a constant;
  // elsewhere it is computed (correctly rounded) per output, rather than kept in registers for every output
  static_assert(4 * (ROWS + OC) <= 32, "factors packed into one word");
  uint32_t factors = 0;
#pragma unroll
  for (int q = 0; q < ROWS; q++) factors |= (uint32_t)(oh + q < OH ? padFactor(oh + q, H, countIncludePad) : 1) << (4 * (OC + q));
#pragma unroll
  for (int j = 0; j < OC; j++) factors |= (uint32_t)(ow + j < OW ? padFactor(ow + j, W, countIncludePad) : 1) << (4 * j);
  constexpr uint32_t ALL3 = 0x33333333u >> (32 - 4 * (ROWS + OC));
  const bool all3 = factors == ALL3;
  float p[ROWS][OC];  // windows of plane 2*od - 1, one per output row
#pragma unroll
  for (int q = 0; q < ROWS; q++)
#pragma unroll
    for (int j = 0; j < OC; j++) p[q][j] = R::zero();
  if (outD0 > 0) {
    // a slab after the first: plane 2*outD0 - 1 (in its window) was the last slab's, reduced as it did
    float b[NR][OC];
    rowsOf<R, L, E, NR>(xc + (i64)(2 * outD0 - 1) * plane, true, 2 * oh - 1, H, W, c0, lane, rs, b);
#pragma unroll
    for (int q = 0; q < ROWS; q++)
#pragma unroll
      for (int j = 0; j < OC; j++) p[q][j] = R::op(R::op(b[2 * q][j], b[2 * q + 1][j]), b[2 * q + 2][j]);
  }
  for (int od = outD0; od < outD0 + outDn; od++) {
    const int d = 2 * od;
    float a[NR][OC], b[NR][OC];
    rowsOf<R, L, E, NR>(xc + (i64)min(d, inLast) * plane, d < D, 2 * oh - 1, H, W, c0, lane, rs, a);
    rowsOf<R, L, E, NR>(xc + (i64)min(d + 1, inLast) * plane, d + 1 < D, 2 * oh - 1, H, W, c0, lane, rs, b);
    const int fd = padFactor(od, D, countIncludePad);
    float* yo = yc + (i64)(od - outD0) * OH * OW;
#pragma unroll
    for (int q = 0; q < ROWS; q++) {
      float o[OC];
#pragma unroll
      for (int j = 0; j < OC; j++) {
        const float A = R::op(R::op(a[2 * q][j], a[2 * q + 1][j]), a[2 * q + 2][j]);
        const float B = R::op(R::op(b[2 * q][j], b[2 * q + 1][j]), b[2 * q + 2][j]);
        const float dv = (float)(fd * ((factors >> (4 * (OC + q))) & 15u) * ((factors >> (4 * j)) & 15u));
        o[j] = R::divide(R::op(R::op(p[q][j], A), B), dv, fd == 3 && all3 ? 1.f / 27.f : __frcp_rn(dv));
        p[q][j] = B;
      }
      if (valid > 0 && oh + q < OH) storeRow<OC>(yo + (i64)q * OW, o, vec, valid);
    }
  }
}

/**
 * The one-read k3 s2 p1 pool over volumes of C channels stored as L's type (nc = volumes x C
 * channel planes), volume v rescaled by rescale[v] (unused for float32). A thread covers E/2 output
 * columns of ROWS output rows (2 * ROWS + 1 input rows a plane). An average divides its sum by a
 * reciprocal and one correction (SumOp::divide): PyTorch's quotient bit for bit, without a division
 * a value.
 */
template <class R, class L, int E, int ROWS = VOLPOOL_POOL_ROWS>
__device__ __forceinline__ void pool_k3s2p1(const typename L::T* __restrict__ x, float* __restrict__ y, i64 nc, int C,
    int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn, int countIncludePad,
    const float2* __restrict__ rescale) {
  constexpr int OC = E / 2;
  const i64 blocks = nc * ((OH + 4 * ROWS - 1) / (4 * ROWS)) * ((OW + 32 * OC - 1) / (32 * OC));
  for (i64 blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const PoolBlock pb = poolBlockOf<OC, ROWS>(blk, OH, OW);
    if (pb.oh >= OH) continue;  // whole warp leaves together
    const Rescaler rs = rescalerOf<L>(rescale, pb.c / C);
    poolBlock<R, L, E, ROWS>(pb, x, y, D, H, W, OH, OW, inD0, inDn, outD0, outDn, countIncludePad, rs);
  }
}

#ifndef VOLPOOL_F32_E
#define VOLPOOL_F32_E 4
#endif

extern "C" __global__ void VOLPOOL_POOL_LAUNCH avgpool_k3s2p1(const float* __restrict__ x, float* __restrict__ y,
    i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn,
    int countIncludePad) {
  pool_k3s2p1<SumOp, LoadF32, VOLPOOL_F32_E>(x, y, nc, 1, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn,
      countIncludePad, nullptr);
}

// maxpool3d kernel 3, stride 2, padding 1, dilation 1 (any ceil_mode): the same one-read kernel with
// PyTorch's max; cells outside the input are -inf, so they never win.
extern "C" __global__ void VOLPOOL_POOL_LAUNCH maxpool_k3s2p1(const float* __restrict__ x, float* __restrict__ y,
    i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0, int outDn) {
  pool_k3s2p1<MaxOp, LoadF32, VOLPOOL_F32_E>(x, y, nc, 1, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn, 1, nullptr);
}

// ---------------------------------------------------------------------------------------------
// maxpool3d k3 s2 p1 on 16-bit values as stored, two to a 32-bit word. A maximum commutes with a
// rescale that keeps the order (Rescaler::monotone), so the window's maximum is taken on the stored
// values, two columns an instruction (Hopper's DPX three-way maxima of int16 and uint16 pairs,
// max.NaN.f16x2 for float16), and only the outputs are widened and rescaled: rows, then planes,
// then columns, and a lane shuffles one word per output row instead of one value per input row.
// Bit for bit the float32 kernel's on the values widened, with two exceptions for float16 that only
// a NaN or a zero can show: a NaN result is the canonical NaN (PyTorch's keeps its last NaN's
// payload), and a window whose maximum is a zero and that holds a -0 is scanned again in PyTorch's
// order (its first zero wins). A volume whose rescale does not keep the order runs poolBlock.

__device__ __forceinline__ uint32_t hmax2nan(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t d;
  asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  uint32_t r = 0;
  for (int k = 0; k < 2; k++) {
    const uint32_t u = (a >> (16 * k)) & 0xffffu, v = (b >> (16 * k)) & 0xffffu;
    const float fu = LoadF16::get(u), fv = LoadF16::get(v);
    const uint32_t m = (fu != fu || fv != fv) ? 0x7fffu : fu > fv ? u : fv > fu ? v : (u & v);
    r |= m << (16 * k);
  }
  return r;
#endif
}

/** The packed maximum of a 16-bit type: PAD is a pair no value of a window is below. */
struct Max16I16 {
  typedef LoadI16 L;
  static constexpr uint32_t PAD = 0x80008000u;  // -32768
  static constexpr bool SIGNED_ZERO = false;
  static __device__ __forceinline__ uint32_t max3(uint32_t a, uint32_t b, uint32_t c) { return __vimax3_s16x2(a, b, c); }
};
struct Max16U16 {
  typedef LoadU16 L;
  static constexpr uint32_t PAD = 0u;
  static constexpr bool SIGNED_ZERO = false;
  static __device__ __forceinline__ uint32_t max3(uint32_t a, uint32_t b, uint32_t c) { return __vimax3_u16x2(a, b, c); }
};
struct Max16F16 {
  typedef LoadF16 L;
  static constexpr uint32_t PAD = 0xfc00fc00u;  // -inf
  static constexpr bool SIGNED_ZERO = true;
  static __device__ __forceinline__ uint32_t max3(uint32_t a, uint32_t b, uint32_t c) {
    return hmax2nan(hmax2nan(a, b), c);
  }
};

/**
 * Input rows r0 .. r0 + 2 * ROWS of one plane, reduced along H in pairs: v[q][k] is the maximum of
 * rows 2q .. 2q + 2 in word k (words 0-3: columns c0 .. c0 + 7; word 4: column c0 - 1 in its upper
 * half, lane 0 only). negZero is set when a float16 -0 is among the words.
 */
template <class P, int ROWS>
__device__ __forceinline__ void max16Rows(const typename P::L::T* __restrict__ plane, bool planeOk, int r0, int H,
    int W, int c0, int lane, uint32_t (&v)[ROWS][5], uint32_t& negZero) {
  constexpr int NR = 2 * ROWS + 1;
  uint32_t w[NR][5];
#pragma unroll
  for (int r = 0; r < NR; r++) {
    const int h = r0 + r;
    const bool ok = planeOk && h >= 0 && h < H;
    const typename P::L::T* row = plane + (i64)(ok ? h : 0) * W;
    if (ok && c0 < W) {
      const uint4 q = VOLPOOL_POOL_CACHE(reinterpret_cast<const uint4*>(row + c0));
      w[r][0] = q.x;
      w[r][1] = q.y;
      w[r][2] = q.z;
      w[r][3] = q.w;
    } else {
#pragma unroll
      for (int k = 0; k < 4; k++) w[r][k] = P::PAD;
    }
    w[r][4] = ok && lane == 0 && c0 >= 1 && c0 - 1 < W ? (loadOneRaw<typename P::L>(row + c0 - 1) << 16) | (P::PAD & 0xffffu)
                                                       : P::PAD;
  }
#pragma unroll
  for (int q = 0; q < ROWS; q++)
#pragma unroll
    for (int k = 0; k < 5; k++) v[q][k] = P::max3(w[2 * q][k], w[2 * q + 1][k], w[2 * q + 2][k]);
  if constexpr (P::SIGNED_ZERO) {
    // -0 (0x8000) is the least of all pairs read as int16; the pad (-inf, 0xfc00) is not it
    uint32_t m = w[0][0];
#pragma unroll
    for (int i = 1; i + 1 < NR * 5; i += 2) m = __vimin3_s16x2(m, w[i / 5][i % 5], w[(i + 1) / 5][(i + 1) % 5]);
    if constexpr ((NR * 5) % 2 == 0) m = __vimin3_s16x2(m, w[NR - 1][4], w[NR - 1][4]);
    negZero |= (m & 0xffffu) == 0x8000u || (m >> 16) == 0x8000u;
  }
}

/** Output (od, oh, ow) of maxpool3d k3 s2 p1, its window scanned in PyTorch's order (D, H, W). */
template <class L>
__device__ __noinline__ float exactMax(const typename L::T* __restrict__ xc, i64 plane, int D, int H, int W, int od,
    int oh, int ow, const Rescaler& rs) {
  float m = MaxOp::zero();
  for (int d = max(2 * od - 1, 0); d <= min(2 * od + 1, D - 1); d++)
    for (int h = max(2 * oh - 1, 0); h <= min(2 * oh + 1, H - 1); h++)
      for (int w = max(2 * ow - 1, 0); w <= min(2 * ow + 1, W - 1); w++)
        m = MaxOp::op(m, rs(L::get(loadOneRaw<L>(xc + d * plane + (i64)h * W + w))));
  return m;
}

template <class P, int ROWS>
__device__ __forceinline__ void max16Block(const PoolBlock& pb, const typename P::L::T* __restrict__ x,
    float* __restrict__ y, int D, int H, int W, int OH, int OW, int inD0, int inDn, int outD0, int outDn,
    const Rescaler& rs) {
  constexpr int OC = 4;
  const int inLast = inD0 + inDn - 1;
  const int lane = threadIdx.x;
  const int oh = pb.oh, ow = pb.ow;
  const bool vec = OW % OC == 0;
  const int c0 = 2 * ow;
  const int valid = min(OC, OW - ow);
  const i64 plane = (i64)H * W;
  const typename P::L::T* xc = x + pb.c * inDn * plane - (i64)inD0 * plane;
  float* yc = y + pb.c * outDn * (i64)OH * OW + (i64)oh * OW + ow;
  uint32_t p[ROWS][5];  // plane 2*od - 1, reduced along H
  uint32_t negZeroP = 0;
#pragma unroll
  for (int q = 0; q < ROWS; q++)
#pragma unroll
    for (int k = 0; k < 5; k++) p[q][k] = P::PAD;
  if (outD0 > 0) {
    max16Rows<P, ROWS>(xc + (i64)(2 * outD0 - 1) * plane, true, 2 * oh - 1, H, W, c0, lane, p, negZeroP);
  }
  for (int od = outD0; od < outD0 + outDn; od++) {
    const int d = 2 * od;
    uint32_t a[ROWS][5], b[ROWS][5];
    uint32_t negZeroA = 0, negZeroB = 0;
    max16Rows<P, ROWS>(xc + (i64)min(d, inLast) * plane, d < D, 2 * oh - 1, H, W, c0, lane, a, negZeroA);
    max16Rows<P, ROWS>(xc + (i64)min(d + 1, inLast) * plane, d + 1 < D, 2 * oh - 1, H, W, c0, lane, b, negZeroB);
    // a -0 among this lane's words, or among its left neighbour's (output 0's window reads the neighbour's last
    // column; lane 0 loads that column itself, in word 4)
    const uint32_t negZeroHere = negZeroP | negZeroA | negZeroB;
    const uint32_t negZeroLeft = __shfl_up_sync(0xffffffffu, negZeroHere, 1);
    const bool negZero = (negZeroHere | (lane > 0 ? negZeroLeft : 0u)) != 0;
    negZeroP = negZeroB;
    float* yo = yc + (i64)(od - outD0) * OH * OW;
#pragma unroll
    for (int q = 0; q < ROWS; q++) {
      uint32_t r[5];
#pragma unroll
      for (int k = 0; k < 5; k++) {
        r[k] = P::max3(p[q][k], a[q][k], b[q][k]);
        p[q][k] = b[q][k];
      }
      const uint32_t left = __shfl_up_sync(0xffffffffu, r[3], 1);
      float o[OC];
#pragma unroll
      for (int j = 0; j < OC; j++) {
        const uint32_t wp = j == 0 ? (lane == 0 ? r[4] : left) : r[j - 1];
        // low half: the maximum of columns 2j - 1 (wp's upper half), 2j and 2j + 1 (r[j]'s halves)
        const uint32_t m = P::max3(r[j], __byte_perm(wp, r[j], 0x7632), __byte_perm(r[j], r[j], 0x1032)) & 0xffffu;
        o[j] = rs(P::L::get(m));
        if constexpr (P::SIGNED_ZERO) {
          if (negZero && (m & 0x7fffu) == 0 && ow + j < OW && oh + q < OH) {
            o[j] = exactMax<typename P::L>(xc, plane, D, H, W, od, oh + q, ow + j, rs);
          }
        }
      }
      if (valid > 0 && oh + q < OH) storeRow<OC>(yo + (i64)q * OW, o, vec, valid);
    }
  }
}

/** maxpool3d k3 s2 p1 on 16-bit stored values: packed where the volume's rescale keeps the order. */
template <class P, int ROWS = VOLPOOL_POOL_ROWS>
__device__ __forceinline__ void maxpool16_k3s2p1(const typename P::L::T* __restrict__ x, float* __restrict__ y, i64 nc,
    int C, int D, int H, int W, int OH, int OW, int inD0, int inDn, int outD0, int outDn,
    const float2* __restrict__ rescale) {
  constexpr int OC = 4;
  const i64 blocks = nc * ((OH + 4 * ROWS - 1) / (4 * ROWS)) * ((OW + 32 * OC - 1) / (32 * OC));
  for (i64 blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const PoolBlock pb = poolBlockOf<OC, ROWS>(blk, OH, OW);
    if (pb.oh >= OH) continue;  // whole warp leaves together
    const Rescaler rs = rescalerOf<typename P::L>(rescale, pb.c / C);
    if (rs.monotone()) {
      max16Block<P, ROWS>(pb, x, y, D, H, W, OH, OW, inD0, inDn, outD0, outDn, rs);
    } else {
      poolBlock<MaxOp, typename P::L, 2 * OC, ROWS>(pb, x, y, D, H, W, OH, OW, inD0, inDn, outD0, outDn, 1, rs);
    }
  }
}

// The same kernels reading 8- and 16-bit volumes as stored (W % 8 == 0: 8 columns a lane), each
// volume of C channels rescaled by its pair in rescale: the float32 kernels' arguments, then C and
// rescale. Their output equals the float32 kernels' on the values widened first, bit for bit.
#ifndef VOLPOOL_TYPED_E
#define VOLPOOL_TYPED_E 8
#endif
extern "C" __global__ void VOLPOOL_POOL_LAUNCH avgpool_k3s2p1_u8(const unsigned char* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int countIncludePad, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<SumOp, LoadU8, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn,
      countIncludePad, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH avgpool_k3s2p1_i8(const signed char* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int countIncludePad, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<SumOp, LoadI8, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn,
      countIncludePad, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH avgpool_k3s2p1_u16(const unsigned short* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int countIncludePad, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<SumOp, LoadU16, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn,
      countIncludePad, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH avgpool_k3s2p1_i16(const short* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int countIncludePad, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<SumOp, LoadI16, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn,
      countIncludePad, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH avgpool_k3s2p1_f16(const unsigned short* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int countIncludePad, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<SumOp, LoadF16Cvt, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn,
      countIncludePad, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH avgpool_k3s2p1_bf16(const unsigned short* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int countIncludePad, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<SumOp, LoadBF16, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn,
      countIncludePad, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH maxpool_k3s2p1_u8(const unsigned char* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<MaxOp, LoadU8, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn, 1, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH maxpool_k3s2p1_i8(const signed char* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<MaxOp, LoadI8, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn, 1, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH maxpool_k3s2p1_u16(const unsigned short* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int C, const float2* __restrict__ rescale) {
  maxpool16_k3s2p1<Max16U16>(x, y, nc, C, D, H, W, OH, OW, inD0, inDn, outD0, outDn, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH maxpool_k3s2p1_i16(const short* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int C, const float2* __restrict__ rescale) {
  maxpool16_k3s2p1<Max16I16>(x, y, nc, C, D, H, W, OH, OW, inD0, inDn, outD0, outDn, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH maxpool_k3s2p1_f16(const unsigned short* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int C, const float2* __restrict__ rescale) {
  maxpool16_k3s2p1<Max16F16>(x, y, nc, C, D, H, W, OH, OW, inD0, inDn, outD0, outDn, rescale);
}
extern "C" __global__ void VOLPOOL_POOL_LAUNCH maxpool_k3s2p1_bf16(const unsigned short* __restrict__ x,
    float* __restrict__ y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int inD0, int inDn, int outD0,
    int outDn, int C, const float2* __restrict__ rescale) {
  pool_k3s2p1<MaxOp, LoadBF16, VOLPOOL_TYPED_E>(x, y, nc, C, D, H, W, OD, OH, OW, inD0, inDn, outD0, outDn, 1, rescale);
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
// fused then a pool of any reduction (maxpool3d, or an avgpool3d the box-sum kernel above does not
// take) in one kernel, the fused output never in memory: the two-tap fast path's stencil (bases and
// steps per dimension, 3 -> 16 channels) feeding a pool of kernel k, stride s, padding pad, dilation
// 1, either ceil_mode. A block of (FP_TW, FP_TH) threads owns a tile of as many final outputs of each
// of FP_PLANES consecutive final planes, all 16 channels. It walks the fused planes those read, in
// order: for each, it computes the fused values of the (FP_TH-1)*s+k rows and (FP_TW-1)*s+k columns
// the tile's windows cover into shared memory (cells outside the fused output hold R::zero(), which
// never wins a max and adds nothing to a sum), then each thread reduces its window's k x k cells
// and folds the result into the final planes whose windows hold that fused plane. The fused values
// are computed as fused_taps2_c3_c16 computes them (the same FMAs in the same order); the pool
// reduces D, then H, then W, in PyTorch's order, so a max (and the NaN it keeps) equals maxpool3d's.
#ifndef VOLPOOL_FP_PLANES
#define VOLPOOL_FP_PLANES 2
#endif
constexpr int FP_TW = 16, FP_TH = 8, FP_PLANES = VOLPOOL_FP_PLANES;

template <class R>
__device__ __forceinline__ void fused_pool_taps2(const float* __restrict__ x, float* __restrict__ y, int D, int H,
    int W, int FD, int FH, int FW, int PD, int PH, int PW, int inD0, int inDn, int outD0, int outDn, int baseD,
    int stepD, int baseH, int stepH, int baseW, int stepW, int k, int s, int pad, int countIncludePad,
    const TapWeights<3, 16>& p) {
  constexpr int CIN = 3, COUT = 16;
  extern __shared__ float4 fusedPoolSmem[];
  float* F = reinterpret_cast<float*>(fusedPoolSmem);  // [COUT][FR][FC]: one fused plane of the tile's region
  const int FR = (FP_TH - 1) * s + k, FC = (FP_TW - 1) * s + k, cells = FR * FC;
  const int tid = threadIdx.y * FP_TW + threadIdx.x;
  const int tilesW = (PW + FP_TW - 1) / FP_TW;
  const int tw0 = (blockIdx.x % tilesW) * FP_TW, th0 = (blockIdx.x / tilesW) * FP_TH;
  const int pd0 = outD0 + blockIdx.y * FP_PLANES;
  const int np = min(FP_PLANES, outD0 + outDn - pd0);
  const i64 b = blockIdx.z;
  const int fh0 = th0 * s - pad, fw0 = tw0 * s - pad;
  const int ph = th0 + threadIdx.y, pw = tw0 + threadIdx.x;
  const i64 plane = (i64)H * W;
  const float* xb = x + b * CIN * (i64)inDn * plane;
  float acc[FP_PLANES][COUT];
#pragma unroll
  for (int q = 0; q < FP_PLANES; q++)
#pragma unroll
    for (int co = 0; co < COUT; co++) acc[q][co] = R::zero();
  const int fdLo = max(pd0 * s - pad, 0), fdHi = min((pd0 + np - 1) * s - pad + k, FD);
  for (int fd = fdLo; fd < fdHi; fd++) {
    const int id = baseD + fd * stepD - inD0;  // first input plane of fused plane fd, in the window
    for (int cell = tid; cell < cells; cell += FP_TW * FP_TH) {
      const int r = cell / FC, c = cell - r * FC;
      const int fh = fh0 + r, fw = fw0 + c;
      float v[COUT];
      if (fh >= 0 && fh < FH && fw >= 0 && fw < FW) {
        const int ih = baseH + fh * stepH, iw = baseW + fw * stepW;
        float xv[CIN][8];
#pragma unroll
        for (int ci = 0; ci < CIN; ci++) {
          const float* xc = xb + ci * (i64)inDn * plane + ((i64)id * H + ih) * W + iw;
#pragma unroll
          for (int a = 0; a < 2; a++)
#pragma unroll
            for (int bb = 0; bb < 2; bb++) {
              const float* rr = xc + ((i64)a * H + bb) * W;
              xv[ci][(a * 2 + bb) * 2] = __ldg(rr);
              xv[ci][(a * 2 + bb) * 2 + 1] = __ldg(rr + 1);
            }
        }
#pragma unroll
        for (int co = 0; co < COUT; co++) {
          float a = p.c[co];
#pragma unroll
          for (int ci = 0; ci < CIN; ci++)
#pragma unroll
            for (int tap = 0; tap < 8; tap++) a = fmaf(xv[ci][tap], p.w[(ci * 8 + tap) * COUT + co], a);
          v[co] = a;
        }
      } else {
#pragma unroll
        for (int co = 0; co < COUT; co++) v[co] = R::zero();
      }
#pragma unroll
      for (int co = 0; co < COUT; co++) F[co * cells + cell] = v[co];
    }
    __syncthreads();
    if (ph < PH && pw < PW) {
      const int r0 = threadIdx.y * s, c0 = threadIdx.x * s;
#pragma unroll
      for (int co = 0; co < COUT; co++) {
        const float* f = F + co * cells + r0 * FC + c0;
        float m = R::zero();
        for (int i = 0; i < k; i++)
          for (int j = 0; j < k; j++) m = R::op(m, f[i * FC + j]);
#pragma unroll
        for (int q = 0; q < FP_PLANES; q++) {
          const int d0 = (pd0 + q) * s - pad;
          if (q < np && fd >= d0 && fd < d0 + k) acc[q][co] = R::op(acc[q][co], m);
        }
      }
    }
    __syncthreads();
  }
  if (ph >= PH || pw >= PW) return;
  // PyTorch's divisor (avg only): the window clipped to the fused output plus padding, or to the output alone
  int h0 = ph * s - pad, w0 = pw * s - pad;
  int h1 = min(h0 + k, FH + pad), w1 = min(w0 + k, FW + pad);
  const int hwPad = (h1 - h0) * (w1 - w0);
  h0 = max(h0, 0); w0 = max(w0, 0); h1 = min(h1, FH); w1 = min(w1, FW);
  const int hw = (h1 - h0) * (w1 - w0);
  const i64 oplane = (i64)outDn * PH * PW;
  float* yo = y + b * COUT * oplane + ((i64)(pd0 - outD0) * PH + ph) * PW + pw;
#pragma unroll
  for (int q = 0; q < FP_PLANES; q++) {
    if (q >= np) break;
    int d0 = (pd0 + q) * s - pad;
    int d1 = min(d0 + k, FD + pad);
    const int poolSize = (d1 - d0) * hwPad;
    d0 = max(d0, 0);
    d1 = min(d1, FD);
    const float inv = 1.f / (float)(countIncludePad ? poolSize : (d1 - d0) * hw);
#pragma unroll
    for (int co = 0; co < COUT; co++) __stcs(yo + co * oplane + (i64)q * PH * PW, R::finish(acc[q][co], inv));
  }
}

extern "C" __global__ void __launch_bounds__(128) fused_maxpool_taps2_c3_c16(const float* __restrict__ x,
    float* __restrict__ y, int n, int D, int H, int W, int FD, int FH, int FW, int PD, int PH, int PW, int inD0,
    int inDn, int outD0, int outDn, int baseD, int stepD, int baseH, int stepH, int baseW, int stepW, int k, int s,
    int pad, const TapWeights<3, 16> p) {
  (void)n;
  fused_pool_taps2<MaxOp>(x, y, D, H, W, FD, FH, FW, PD, PH, PW, inD0, inDn, outD0, outDn, baseD, stepD, baseH, stepH,
      baseW, stepW, k, s, pad, 1, p);
}

extern "C" __global__ void __launch_bounds__(128) fused_avgpool_taps2_c3_c16(const float* __restrict__ x,
    float* __restrict__ y, int n, int D, int H, int W, int FD, int FH, int FW, int PD, int PH, int PW, int inD0,
    int inDn, int outD0, int outDn, int baseD, int stepD, int baseH, int stepH, int baseW, int stepW, int k, int s,
    int pad, int countIncludePad, const TapWeights<3, 16> p) {
  (void)n;
  fused_pool_taps2<SumOp>(x, y, D, H, W, FD, FH, FW, PD, PH, PW, inD0, inDn, outD0, outDn, baseD, stepD, baseH, stepH,
      baseW, stepW, k, s, pad, countIncludePad, p);
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
extern "C" __global__ void widen(const unsigned char* __restrict__ x, float* __restrict__ y, i64 numel, int type,
    int swap, const float2* __restrict__ rescale) {
  const i64 v = blockIdx.y;
  const Rescaler rs = rescalerOf<LoadU8>(rescale, v);
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
    switch (type) {  // the pool kernels' loads widen with the same functions
      case 0: f = LoadU8::get(u); break;
      case 1: f = LoadI8::get(u); break;
      case 2: f = LoadU16::get(u); break;
      case 3: f = LoadI16::get(u); break;
      case 4: f = LoadF16::get(u); break;
      default: f = LoadBF16::get(u); break;
    }
    yv[i] = rs(f);
  }
}
