// A CUDA kernel emulator for the CPU: volpool.cu compiled with g++ against this header runs each
// CUDA thread of a block as an OS thread (blocks one after another), with __syncthreads as a block
// barrier and warp shuffles as a warp barrier. Slow, but it runs the kernels' own code, so a kernel
// change is checked on a machine without a GPU before device time is spent (scripts/emu/run.sh).
// It checks logic (indices, windows, masks, widening bits), not performance or memory ordering.
#pragma once
#include <array>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct emu_dim3 { unsigned x = 1, y = 1, z = 1; };
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }

namespace emu {
struct Block {
  emu_dim3 grid, block;
  std::unique_ptr<std::barrier<>> bar;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<std::array<uint32_t, 32>> lanes;
  std::vector<char> dyn;
};
inline Block g;
inline thread_local emu_dim3 tid, bid;
inline int linear() { return tid.x + tid.y * g.block.x + tid.z * g.block.x * g.block.y; }
}  // namespace emu

#define threadIdx emu::tid
#define blockIdx emu::bid
#define blockDim emu::g.block
#define gridDim emu::g.grid
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define EMU_DYNAMIC_SMEM (emu::g.dyn.data())

inline uint32_t __float_as_uint(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.f / a; }
using std::fmaf;
inline float fabsf(float v) { return std::fabs(v); }
using std::isnan;
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
inline void __syncthreads() { emu::g.bar->arrive_and_wait(); }
inline float __shfl_up_sync(unsigned, float v, unsigned d) {
  int t = emu::linear(), w = t / 32, lane = t % 32;
  emu::g.lanes[w][lane] = __float_as_uint(v);
  emu::g.warps[w]->arrive_and_wait();
  uint32_t r = lane >= (int)d ? emu::g.lanes[w][lane - d] : __float_as_uint(v);
  emu::g.warps[w]->arrive_and_wait();
  return __uint_as_float(r);
}
inline unsigned __shfl_up_sync(unsigned, unsigned v, unsigned d) {
  int t = emu::linear(), w = t / 32, lane = t % 32;
  emu::g.lanes[w][lane] = v;
  emu::g.warps[w]->arrive_and_wait();
  uint32_t r = lane >= (int)d ? emu::g.lanes[w][lane - d] : v;
  emu::g.warps[w]->arrive_and_wait();
  return r;
}
/** Byte n of the result is byte (s >> 4n) & 7 of the eight bytes x (0-3), y (4-7). */
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t b = (uint64_t)y << 32 | x;
  unsigned r = 0;
  for (int n = 0; n < 4; n++) r |= (unsigned)((b >> (8 * ((s >> (4 * n)) & 7))) & 0xffu) << (8 * n);
  return r;
}
// Hopper's DPX three-way minima and maxima of 16-bit pairs
template <class H, class F>
inline unsigned emu_pairs(unsigned a, unsigned b, unsigned c, F f) {
  unsigned r = 0;
  for (int k = 0; k < 2; k++) {
    const H x = (H)(a >> (16 * k)), y = (H)(b >> (16 * k)), z = (H)(c >> (16 * k));
    r |= (unsigned)(uint16_t)f(f(x, y), z) << (16 * k);
  }
  return r;
}
inline unsigned __vimax3_s16x2(unsigned a, unsigned b, unsigned c) {
  return emu_pairs<int16_t>(a, b, c, [](int16_t x, int16_t y) { return x > y ? x : y; });
}
inline unsigned __vimax3_u16x2(unsigned a, unsigned b, unsigned c) {
  return emu_pairs<uint16_t>(a, b, c, [](uint16_t x, uint16_t y) { return x > y ? x : y; });
}
inline unsigned __vimin3_s16x2(unsigned a, unsigned b, unsigned c) {
  return emu_pairs<int16_t>(a, b, c, [](int16_t x, int16_t y) { return x < y ? x : y; });
}
inline void __pipeline_memcpy_async(void* dst, const void* src, size_t size, size_t zfill) {
  std::memcpy(dst, src, size - zfill);
  std::memset(static_cast<char*>(dst) + size - zfill, 0, zfill);
}
inline void __pipeline_commit() {}
inline void __pipeline_wait_prior(int) {}

namespace emu {
/** Runs kernel k over grid x block, blocks one after another, each thread of a block an OS thread. */
template <class K, class... A>
void launch(K k, emu_dim3 grid, emu_dim3 block, size_t smem, A... args) {
  g.grid = grid;
  g.block = block;
  const int nt = block.x * block.y * block.z, nw = (nt + 31) / 32;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        g.bar = std::make_unique<std::barrier<>>(nt);
        g.warps.clear();
        for (int w = 0; w < nw; w++) g.warps.push_back(std::make_unique<std::barrier<>>(std::min(32, nt - 32 * w)));
        g.lanes.assign(nw, {});
        g.dyn.assign(smem + 16, (char)0x7f);  // garbage a kernel must not read
        std::vector<std::thread> ts;
        for (int t = 0; t < nt; t++) {
          ts.emplace_back([&, t] {
            tid = {(unsigned)(t % block.x), (unsigned)((t / block.x) % block.y), (unsigned)(t / (block.x * block.y))};
            bid = {bx, by, bz};
            k(args...);
            g.bar->arrive_and_drop();
            g.warps[t / 32]->arrive_and_drop();
          });
        }
        for (auto& th : ts) th.join();
      }
}
}  // namespace emu
