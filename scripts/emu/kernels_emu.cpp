// The kernels of volpool.cu (namespace cur) against those of a trusted commit (namespace old), both
// run by cuda_emu.h. Prints one line per case and exits 1 at the first mismatch, naming the index.
#include "cuda_emu.h"
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
typedef long long i64;
#include "cur.inc"
#include "old.inc"

static int failures = 0;
static std::mt19937_64 rng(7);

static int outLen(int in, int k, int s, int p, bool ceil) {
  long long num = (long long)in + 2LL * p - (k - 1) - 1 + (ceil ? s - 1 : 0);
  long long out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil && (out - 1) * s >= (long long)in + p) out--;
  return (int)out;
}

static bool same(const std::string& what, const std::vector<float>& got, const std::vector<float>& want, double tol) {
  if (got.size() != want.size()) {
    std::printf("FAIL %s: %zu values, expected %zu\n", what.c_str(), got.size(), want.size());
    failures++;
    return false;
  }
  for (size_t i = 0; i < got.size(); i++) {
    float g = got[i], w = want[i];
    // tol 0: the same bits; tol < 0: the same bits but for a NaN's payload (a sum's NaN on the GPU is the
    // canonical one, while the host's add keeps one operand's payload, whichever the compiler put first)
    const bool bothNan = std::isnan(g) && std::isnan(w);
    bool ok = tol == 0 ? __float_as_uint(g) == __float_as_uint(w)
        : tol < 0 ? bothNan || __float_as_uint(g) == __float_as_uint(w)
                  : bothNan || g == w || std::fabs(g - w) <= tol + tol * std::fabs(w);
    if (!ok) {
      std::printf("FAIL %s: element %zu is %.9g (0x%08x), expected %.9g (0x%08x)\n", what.c_str(), i, g,
          __float_as_uint(g), w, __float_as_uint(w));
      failures++;
      return false;
    }
  }
  std::printf("ok   %s (%zu values)\n", what.c_str(), got.size());
  return true;
}

/** Planes [p0, p1) of each of nc channel volumes of D planes of hw values: the layout a slab's buffer has. */
template <class T>
static std::vector<T> window(const std::vector<T>& x, i64 nc, int D, i64 hw, int p0, int p1) {
  std::vector<T> w;
  for (i64 c = 0; c < nc; c++) w.insert(w.end(), x.begin() + (c * D + p0) * hw, x.begin() + (c * D + p1) * hw);
  return w;
}

// ---- the one-read k3 s2 p1 pools on stored values against widen + the float32 pool --------------------------------
struct Typed {
  const char* name;
  int size, code;
  int zeros;  // float16: 1, values of both zeros, negatives and a few NaN; 2, +0 but -0 at columns 16k + 7
  void (*avg)(const void*, float*, i64, int, int, int, int, int, int, int, int, int, int, int, int, const float2*);
  void (*max)(const void*, float*, i64, int, int, int, int, int, int, int, int, int, int, int, const float2*);
};

#define TYPED(NAME, T, SIZE, CODE, ZEROS)                                                                          \
  Typed{#NAME, SIZE, CODE, ZEROS,                                                                                  \
      [](const void* x, float* y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int a, int b, int c, int d, \
          int cip, int C, const float2* r) {                                                                       \
        cur::avgpool_k3s2p1_##NAME((const T*)x, y, nc, D, H, W, OD, OH, OW, a, b, c, d, cip, C, r);                \
      },                                                                                                           \
      [](const void* x, float* y, i64 nc, int D, int H, int W, int OD, int OH, int OW, int a, int b, int c, int d, \
          int C, const float2* r) { cur::maxpool_k3s2p1_##NAME((const T*)x, y, nc, D, H, W, OD, OH, OW, a, b, c, d, C, r); }}

static void typedPools() {
  const Typed types[] = {TYPED(u8, unsigned char, 1, 0, false), TYPED(i8, signed char, 1, 1, false),
      TYPED(u16, unsigned short, 2, 2, false), TYPED(i16, short, 2, 3, false), TYPED(f16, unsigned short, 2, 4, false),
      TYPED(f16, unsigned short, 2, 4, 1), TYPED(f16, unsigned short, 2, 4, 2), TYPED(bf16, unsigned short, 2, 5, false)};
  struct Shape { int n, C, D, H, W; } shapes[] = {{3, 2, 7, 9, 16}, {2, 1, 6, 5, 24}, {1, 3, 4, 3, 136}};
  const float2 rescales[] = {{1.f, 0.f}, {0.1f, -1024.f}, {-2.5f, 3.f}};
  for (const Shape& s : shapes) {
    const int OD = outLen(s.D, 3, 2, 1, false), OH = outLen(s.H, 3, 2, 1, false), OW = outLen(s.W, 3, 2, 1, false);
    const i64 nc = (i64)s.n * s.C, hw = (i64)s.H * s.W, numel = (i64)s.C * s.D * hw;
    std::vector<float2> rs(s.n);
    for (int v = 0; v < s.n; v++) rs[v] = rescales[v % 3];
    for (const Typed& t : types) {
      std::vector<unsigned char> stored(s.n * numel * t.size);
      for (auto& b : stored) b = (unsigned char)rng();
      if (t.zeros == 2) {
        // the -0 is the first zero of the windows of the lanes to its right, and in none of their own columns
        for (size_t i = 0; i + 1 < stored.size(); i += 2) {
          const uint16_t v = (i / 2) % s.W % 16 == 7 ? 0x8000 : 0x0000;
          stored[i] = (unsigned char)v;
          stored[i + 1] = (unsigned char)(v >> 8);
        }
      } else if (t.zeros) {
        const uint16_t pick[] = {0x0000, 0x8000, 0xbc00, 0x8000, 0x0000, 0xc000, 0x8001, 0x0000};
        for (size_t i = 0; i + 1 < stored.size(); i += 2) {
          const uint64_t r = rng();
          const uint16_t v = r % 97 == 0 ? 0x7e01 : r % 89 == 0 ? 0x3c00 : pick[r % 8];
          stored[i] = (unsigned char)v;
          stored[i + 1] = (unsigned char)(v >> 8);
        }
      }
      std::vector<float> wide(s.n * numel);
      emu::launch(old::widen, {1, (unsigned)s.n, 1}, {64, 1, 1}, 0, (const unsigned char*)stored.data(), wide.data(),
          numel, t.code, 0, (const float2*)rs.data());
      // whole volumes, then two slabs: output planes [0, 2) and [2, OD), as SlabPlan cuts them
      int cuts[][2] = {{0, OD}, {0, 2}, {2, OD}};
      for (auto& cut : cuts) {
        const int o0 = cut[0], o1 = cut[1];
        const int i0 = std::max(0, 2 * o0 - 1), i1 = std::min(s.D, 2 * (o1 - 1) + 2);
        const int outDn = o1 - o0, inDn = i1 - i0;
        std::vector<float> xw = window(wide, nc, s.D, hw, i0, i1);
        std::vector<unsigned char> sw;
        for (i64 c = 0; c < nc; c++)
          sw.insert(sw.end(), stored.begin() + (c * s.D + i0) * hw * t.size, stored.begin() + (c * s.D + i1) * hw * t.size);
        const i64 outN = nc * outDn * OH * OW;
        const unsigned blocks = (unsigned)(nc * ((OH + 7) / 8) * ((OW + 63) / 64));
        char what[160];
        for (int cip = 0; cip < 2; cip++) {
          std::vector<float> want(outN, NAN), got(outN, NAN);
          // the float32 kernel of this commit on the values widened: the same arithmetic after the loads
          emu::launch(cur::avgpool_k3s2p1, {blocks, 1, 1}, {32, 4, 1}, 0, (const float*)xw.data(), want.data(), nc, s.D,
              s.H, s.W, OD, OH, OW, i0, inDn, o0, outDn, cip);
          emu::launch(t.avg, {blocks, 1, 1}, {32, 4, 1}, 0, (const void*)sw.data(), got.data(), nc, s.D, s.H, s.W, OD,
              OH, OW, i0, inDn, o0, outDn, cip, s.C, (const float2*)rs.data());
          std::snprintf(what, sizeof what, "avgpool_k3s2p1_%s%s [%d,%d,%d,%d,%d] planes [%d,%d) cip %d", t.name, t.zeros == 1 ? " (zeros)" : t.zeros == 2 ? " (-0 at 16k+7)" : "", s.n, s.C,
              s.D, s.H, s.W, o0, o1, cip);
          same(what, got, want, -1);
        }
        std::vector<float> want(outN, NAN), got(outN, NAN);
        emu::launch(old::maxpool_k3s2p1, {blocks, 1, 1}, {32, 4, 1}, 0, (const float*)xw.data(), want.data(), nc, s.D,
            s.H, s.W, OD, OH, OW, i0, inDn, o0, outDn);
        emu::launch(t.max, {blocks, 1, 1}, {32, 4, 1}, 0, (const void*)sw.data(), got.data(), nc, s.D, s.H, s.W, OD, OH,
            OW, i0, inDn, o0, outDn, s.C, (const float2*)rs.data());
        std::snprintf(what, sizeof what, "maxpool_k3s2p1_%s%s [%d,%d,%d,%d,%d] planes [%d,%d)", t.name, t.zeros == 1 ? " (zeros)" : t.zeros == 2 ? " (-0 at 16k+7)" : "", s.n, s.C, s.D,
            s.H, s.W, o0, o1);
        // float16: a NaN result is the canonical NaN (the float32 kernel keeps the last NaN's payload)
        same(what, got, want, t.code == 4 ? -1 : 0);
      }
    }
    // the float32 kernels against their old selves
    std::vector<float> x(s.n * numel);
    std::uniform_real_distribution<float> u(-4.f, 4.f);
    for (auto& v : x) v = u(rng);
    x[5] = NAN;
    x[x.size() / 2] = INFINITY;
    const unsigned blocks = (unsigned)(nc * ((OH + 7) / 8) * ((OW + 63) / 64));
    for (int op = 0; op < 2; op++) {
      std::vector<float> want(nc * OD * OH * OW, NAN), got(nc * OD * OH * OW, NAN);
      if (op == 0) {
        emu::launch(old::avgpool_k3s2p1, {blocks, 1, 1}, {32, 4, 1}, 0, (const float*)x.data(), want.data(), nc, s.D,
            s.H, s.W, OD, OH, OW, 0, s.D, 0, OD, 1);
        emu::launch(cur::avgpool_k3s2p1, {blocks, 1, 1}, {32, 4, 1}, 0, (const float*)x.data(), got.data(), nc, s.D,
            s.H, s.W, OD, OH, OW, 0, s.D, 0, OD, 1);
      } else {
        emu::launch(old::maxpool_k3s2p1, {blocks, 1, 1}, {32, 4, 1}, 0, (const float*)x.data(), want.data(), nc, s.D,
            s.H, s.W, OD, OH, OW, 0, s.D, 0, OD);
        emu::launch(cur::maxpool_k3s2p1, {blocks, 1, 1}, {32, 4, 1}, 0, (const float*)x.data(), got.data(), nc, s.D,
            s.H, s.W, OD, OH, OW, 0, s.D, 0, OD);
      }
      char what[120];
      std::snprintf(what, sizeof what, "%s float32 [%d,%d,%d,%d,%d] against the old kernel",
          op == 0 ? "avgpool_k3s2p1" : "maxpool_k3s2p1", s.n, s.C, s.D, s.H, s.W);
      // the old kernel multiplied by its divisor's reciprocals: within 1e-6
      same(what, got, want, op == 0 ? 1e-6 : 0);
      if (op == 0) {
        // the CPU backend's arithmetic (AvgPool3dCpu.fast): sums along W, H, then D in window order, divided; on
        // these values and on them scaled into the subnormals, counting the padding and not
        for (int variant = 0; variant < 4; variant++) {
          const int cip = variant & 1;
          std::vector<float> xs(x);
          if (variant >= 2) {
            for (float& v : xs) v *= 0x1p-140f;
          }
          std::vector<float> cur32(got.size()), cpu(got.size());
          emu::launch(cur::avgpool_k3s2p1, {blocks, 1, 1}, {32, 4, 1}, 0, (const float*)xs.data(), cur32.data(), nc, s.D,
              s.H, s.W, OD, OH, OW, 0, s.D, 0, OD, cip);
          auto lo = [](int o) { return std::max(2 * o - 1, 0); };
          auto hi = [](int o, int n) { return std::min(2 * o + 2, n); };
          auto f = [cip](int o, int n) { return cip ? std::min(2 * o + 2, n + 1) - (2 * o - 1) : std::min(2 * o + 2, n) - std::max(2 * o - 1, 0); };
          for (i64 c = 0; c < nc; c++)
            for (int od = 0; od < OD; od++)
              for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                  float sd = 0;
                  for (int d = lo(od); d < hi(od, s.D); d++) {
                    float sh = 0;
                    for (int h = lo(oh); h < hi(oh, s.H); h++) {
                      float sw = 0;
                      for (int w = lo(ow); w < hi(ow, s.W); w++) sw += xs[((c * s.D + d) * s.H + h) * s.W + w];
                      sh += sw;
                    }
                    sd += sh;
                  }
                  cpu[((c * OD + od) * OH + oh) * OW + ow] = sd / (float)(f(od, s.D) * f(oh, s.H) * f(ow, s.W));
                }
          std::snprintf(what, sizeof what, "avgpool_k3s2p1 float32 [%d,%d,%d,%d,%d] cip %d%s against sums divided (the CPU's)",
              s.n, s.C, s.D, s.H, s.W, cip, variant >= 2 ? ", subnormal" : "");
          same(what, cur32, cpu, -1);
        }
      }
    }
  }
}

// ---- fused then a pool in one kernel against fused, then the generic pool --------------------------------------------
struct PoolCase { bool max; int k, s, p; bool ceil, cip; };

static void fusedPools() {
  struct Stencil { int D, H, W, base, step; } stencils[] = {{8, 12, 20, 0, 1}, {9, 13, 21, 1, 2}, {6, 19, 37, 0, 1}};
  const PoolCase pools[] = {{true, 3, 2, 1, false, true}, {true, 2, 2, 0, true, true}, {true, 3, 1, 1, false, true},
      {true, 2, 1, 1, true, true}, {true, 1, 1, 0, false, true}, {false, 3, 2, 1, false, true},
      {false, 3, 2, 1, true, false}, {false, 5, 3, 2, true, false}, {false, 4, 2, 2, false, true}};
  const int n = 2;
  cur::TapWeights<3, 16> w;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (float& v : w.w) v = u(rng);
  for (float& v : w.c) v = u(rng);
  old::TapWeights<3, 16> wo;
  std::memcpy(&wo, &w, sizeof w);
  for (const Stencil& st : stencils) {
    const int FD = (st.D - 2 - st.base) / st.step + 1, FH = (st.H - 2 - st.base) / st.step + 1,
              FW = (st.W - 2 - st.base) / st.step + 1;
    const i64 hw = (i64)st.H * st.W, fhw = (i64)FH * FW;
    std::vector<float> x((i64)n * 3 * st.D * hw);
    for (auto& v : x) v = u(rng) * 3;
    for (int k = 0; k < 6; k++) x[rng() % x.size()] = k % 3 == 0 ? NAN : k % 3 == 1 ? INFINITY : -INFINITY;
    std::vector<float> fused((i64)n * 16 * FD * fhw, NAN);
    emu::launch(old::fused_taps2_c3_c16, {(unsigned)(((FW + 31) / 32) * ((FH + 15) / 16)), (unsigned)FD, (unsigned)n},
        {16, 16, 1}, 0, (const float*)x.data(), fused.data(), n, st.D, st.H, st.W, FD, FH, FW, 0, st.D, 0, FD, st.base,
        st.step, st.base, st.step, st.base, st.step, wo);
    for (const PoolCase& pc : pools) {
      const int PD = outLen(FD, pc.k, pc.s, pc.p, pc.ceil), PH = outLen(FH, pc.k, pc.s, pc.p, pc.ceil),
                PW = outLen(FW, pc.k, pc.s, pc.p, pc.ceil);
      if (PD < 1 || PH < 1 || PW < 1) continue;
      const i64 nc = (i64)n * 16, outN = nc * PD * PH * PW;
      std::vector<float> want(outN, NAN);
      const unsigned gblocks = (unsigned)std::min<i64>((outN + 255) / 256, 64);
      if (pc.max) {
        emu::launch(old::maxpool_generic, {gblocks, 1, 1}, {256, 1, 1}, 0, (const float*)fused.data(), want.data(), nc,
            FD, FH, FW, PD, PH, PW, 0, FD, 0, PD, pc.k, pc.s, pc.p, 1);
      } else {
        emu::launch(old::avgpool_generic, {gblocks, 1, 1}, {256, 1, 1}, 0, (const float*)fused.data(), want.data(), nc,
            FD, FH, FW, PD, PH, PW, 0, FD, 0, PD, pc.k, pc.s, pc.p, pc.cip ? 1 : 0);
      }
      const int FR = (cur::FP_TH - 1) * pc.s + pc.k, FC = (cur::FP_TW - 1) * pc.s + pc.k;
      const size_t smem = (size_t)16 * FR * FC * 4;
      // whole, then final planes [0, 1) and [1, PD) with the input window those read
      int cuts[][2] = {{0, PD}, {0, 1}, {1, PD}};
      for (auto& cut : cuts) {
        const int o0 = cut[0], o1 = cut[1];
        if (o1 <= o0) continue;
        const int f0 = std::max(0, o0 * pc.s - pc.p), f1 = std::min(FD, (o1 - 1) * pc.s - pc.p + pc.k);
        const int i0 = st.base + f0 * st.step, i1 = st.base + (f1 - 1) * st.step + 2;
        std::vector<float> xw = window(x, (i64)n * 3, st.D, hw, i0, i1);
        const int outDn = o1 - o0;
        std::vector<float> got((i64)nc * outDn * PH * PW, NAN);
        const emu_dim3 grid{(unsigned)(((PW + cur::FP_TW - 1) / cur::FP_TW) * ((PH + cur::FP_TH - 1) / cur::FP_TH)),
            (unsigned)((outDn + cur::FP_PLANES - 1) / cur::FP_PLANES), (unsigned)n};
        if (pc.max) {
          emu::launch(cur::fused_maxpool_taps2_c3_c16, grid, {(unsigned)cur::FP_TW, (unsigned)cur::FP_TH, 1}, smem,
              (const float*)xw.data(), got.data(), n, st.D, st.H, st.W, FD, FH, FW, PD, PH, PW, i0, i1 - i0, o0, outDn,
              st.base, st.step, st.base, st.step, st.base, st.step, pc.k, pc.s, pc.p, w);
        } else {
          emu::launch(cur::fused_avgpool_taps2_c3_c16, grid, {(unsigned)cur::FP_TW, (unsigned)cur::FP_TH, 1}, smem,
              (const float*)xw.data(), got.data(), n, st.D, st.H, st.W, FD, FH, FW, PD, PH, PW, i0, i1 - i0, o0, outDn,
              st.base, st.step, st.base, st.step, st.base, st.step, pc.k, pc.s, pc.p, pc.cip ? 1 : 0, w);
        }
        char what[200];
        std::snprintf(what, sizeof what, "fused_%spool_taps2 (input [%d,%d,%d] base %d step %d) k%d s%d p%d ceil %d cip %d planes [%d,%d)",
            pc.max ? "max" : "avg", st.D, st.H, st.W, st.base, st.step, pc.k, pc.s, pc.p, pc.ceil, pc.cip, o0, o1);
        // the max must equal the two kernels' bit for bit; the sum's order differs (golden tolerance)
        same(what, got, window(want, nc, PD, (i64)PH * PW, o0, o1), pc.max ? 0 : 1e-5);
      }
    }
  }
}

// ---- the widen kernel against the last commit's, every bit pattern, both byte orders, rescales -----------------------
static void widening() {
  const float2 rescales[] = {{1.f, 0.f}, {0.1f, -1024.f}, {-2.5f, 3.f}, {1.f, 0.f}};
  for (int code = 0; code < 6; code++) {
    const int size = code < 2 ? 1 : 2;
    const i64 numel = size == 1 ? 256 : 65536;
    for (int swap = 0; swap < (size == 2 ? 2 : 1); swap++) {
      std::vector<unsigned char> x(4 * numel * size);
      for (int v = 0; v < 4; v++)
        for (i64 i = 0; i < numel; i++) {
          if (size == 1) {
            x[v * numel + i] = (unsigned char)i;
          } else {
            const unsigned short u = (unsigned short)(swap ? ((i & 0xff) << 8) | (i >> 8) : i);
            std::memcpy(&x[(v * numel + i) * 2], &u, 2);
          }
        }
      std::vector<float> want(4 * numel, 1.f), got(4 * numel, 2.f);
      emu::launch(old::widen, {4, 4, 1}, {64, 1, 1}, 0, (const unsigned char*)x.data(), want.data(), numel, code, swap,
          (const float2*)rescales);
      emu::launch(cur::widen, {4, 4, 1}, {64, 1, 1}, 0, (const unsigned char*)x.data(), got.data(), numel, code, swap,
          (const float2*)rescales);
      char what[80];
      std::snprintf(what, sizeof what, "widen type %d swap %d: every pattern, four rescales", code, swap);
      // bit for bit; a NaN rescaled keeps either operand's payload on the host (the GPU's is canonical), so the
      // rescaled volumes (1 and 2) compare NaN as NaN, the identity ones (0 and 3) every bit, payloads too
      same(what, got, want, -1);
      std::vector<float> g0(got.begin(), got.begin() + numel), w0(want.begin(), want.begin() + numel);
      std::vector<float> g3(got.begin() + 3 * numel, got.end()), w3(want.begin() + 3 * numel, want.end());
      same(std::string(what) + ", identity volume 0", g0, w0, 0);
      same(std::string(what) + ", identity volume 3", g3, w3, 0);
    }
  }
}

int main(int argc, char** argv) {
  std::string only = argc > 1 ? argv[1] : "all";
  if (only == "all" || only == "widen") widening();
  if (only == "all" || only == "pools") typedPools();
  if (only == "all" || only == "fused") fusedPools();
  std::printf(failures ? "%d FAILED\n" : "all cases match\n", failures);
  return failures ? 1 : 0;
}
