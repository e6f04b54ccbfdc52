"""PyTorch anchors for the pools on stored dtypes (issue 32, item 5), in the same call as GpuBench --only dtypes.

What a PyTorch user writes for a CT volume stored as int16 (or a float16 model output): convert to float32,
rescale, pool. Eager runs the conversion and the pool as separate kernels (the float32 copy goes through memory);
torch.compile may fuse them. Shapes as GpuBench: avgpool3d and maxpool3d k3 s2 p1 on [16,32,128,128,256].
'floor_ms' is the bytes that must move (stored input read once, float32 output written once) over the measured
device-to-device copy bandwidth, as GpuBench computes it.
    python3 torch_dtype_anchors.py [--compile-dtypes int16,float16] [--json FILE]
"""
import argparse, functools, json

import torch
import torch.nn.functional as F

import torch_anchors  # beside this file: the copy of ../shared/bench/torch_anchors.py

# the anchors' CUDA-event median, with this script's own (shorter) counts: each case here moves GBs
bench = functools.partial(torch_anchors.bench, iters=20, warm=3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="16,32,128,128,256")
    ap.add_argument("--compile-dtypes", default="int16", help="dtypes also timed through torch.compile ('' for none)")
    ap.add_argument("--json")
    a = ap.parse_args()
    compiled = set(v for v in a.compile_dtypes.split(",") if v)
    r = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    big = torch.empty(1 << 29, device="cuda").uniform_()
    dst = torch.empty_like(big)
    bw = 2 * big.numel() * 4 / (bench(lambda: dst.copy_(big)) * 1e-3)
    r["d2d_copy_GBps"] = bw / 1e9
    del big, dst
    shape = [int(v) for v in a.shape.split(",")]
    slope, intercept = 0.5, -1024.0
    gen = torch.Generator(device="cuda").manual_seed(0)
    for name, make in (("int16", lambda: torch.randint(-32768, 32767, shape, dtype=torch.int16, device="cuda", generator=gen)),
                       ("float16", lambda: torch.rand(shape, device="cuda", generator=gen).to(torch.float16)),
                       ("uint8", lambda: torch.randint(0, 255, shape, dtype=torch.uint8, device="cuda", generator=gen))):
        x = make()
        for pool, fn in (("avgpool", lambda v: F.avg_pool3d(v, 3, 2, 1)), ("maxpool", lambda v: F.max_pool3d(v, 3, 2, 1))):
            def eager(fn=fn):
                return fn(x.to(torch.float32) * slope + intercept)
            with torch.no_grad():
                y = eager()
                r[f"{pool}_{name}_floor_ms"] = (x.numel() * x.element_size() + y.numel() * 4) / bw * 1e3
                r[f"{pool}_{name}_eager_ms"] = bench(eager)
                r[f"{pool}_{name}_eager_x_floor"] = r[f"{pool}_{name}_eager_ms"] / r[f"{pool}_{name}_floor_ms"]
                del y
                if name not in compiled:
                    continue
                try:
                    comp = torch.compile(lambda v, fn=fn: fn(v.to(torch.float32) * slope + intercept))
                    comp(x)
                    r[f"{pool}_{name}_compiled_ms"] = bench(lambda: comp(x))
                    r[f"{pool}_{name}_compiled_x_floor"] = r[f"{pool}_{name}_compiled_ms"] / r[f"{pool}_{name}_floor_ms"]
                except Exception as e:  # no triton, say: the figure is missing, and why
                    r[f"{pool}_{name}_compiled_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            torch.cuda.empty_cache()
        del x
        torch.cuda.empty_cache()
    # float32 input, for the ratio of the stored dtypes to the float32 they replace
    x = torch.rand(shape, device="cuda", generator=gen)
    with torch.no_grad():
        for pool, fn in (("avgpool", lambda: F.avg_pool3d(x, 3, 2, 1)), ("maxpool", lambda: F.max_pool3d(x, 3, 2, 1))):
            y = fn()
            r[f"{pool}_float32_floor_ms"] = (x.numel() * 4 + y.numel() * 4) / bw * 1e3
            r[f"{pool}_float32_eager_ms"] = bench(fn)
            del y
    for k, v in r.items():
        print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
