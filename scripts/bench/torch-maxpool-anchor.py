#!/usr/bin/env python3
"""PyTorch's own figures for maxpool3d, run in the same device call as GpuBench's maxpool rows.

    python3 scripts/bench/torch-maxpool-anchor.py --anchors bench/anchors/torch_anchors.py [--json FILE]

Reuses bench/anchors/torch_anchors.py (a copy of ../shared/bench/torch_anchors.py) (its Fused model and CUDA-event bench()), and measures as it
does: the device-to-device copy bandwidth; F.max_pool3d(3, 2, 1) on [16,32,128,128,256] (eager, and
its memory floor: input read once, output written once, over that bandwidth); the fused model then
MaxPool3d(3, 2, 1) on batches of 128 reference volumes [3,16,32,32] (eager fp32).
"""
import argparse
import importlib.util
import json

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchors", default="bench/anchors/torch_anchors.py")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--pool-shape", default="16,32,128,128,256")
    ap.add_argument("--json")
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("torch_anchors", a.anchors)
    ta = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ta)
    r = {}
    big = torch.empty(1 << 29, device="cuda").uniform_()
    dst = torch.empty_like(big)
    bw = 2 * big.numel() * 4 / (ta.bench(lambda: dst.copy_(big), 20) * 1e-3)
    r["d2d_copy_GBps"] = bw / 1e9
    del big, dst
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        shape = [int(v) for v in a.pool_shape.split(",")]
        x = torch.rand(*shape, device="cuda")
        y = F.max_pool3d(x, 3, 2, 1)
        r["maxpool_floor_ms"] = (x.numel() + y.numel()) * 4 / bw * 1e3
        r["maxpool_eager_ms"] = ta.bench(lambda: F.max_pool3d(x, 3, 2, 1), 20, 3)
        r["maxpool_eager_x_floor"] = r["maxpool_eager_ms"] / r["maxpool_floor_ms"]
        del x, y
        torch.manual_seed(0)
        m = ta.Fused().cuda().eval()
        xs = [torch.rand(a.batch, 3, 16, 32, 32, device="cuda") for _ in range(4)]
        i = [0]

        def nxt():
            i[0] = (i[0] + 1) % 4
            return xs[i[0]]
        out = F.max_pool3d(m(xs[0]), 3, 2, 1)
        r["fused_maxpool_floor_ms"] = (xs[0].numel() + out.numel()) * 4 / bw * 1e3
        r["fused_maxpool_eager_fp32_ms"] = ta.bench(lambda: F.max_pool3d(m(nxt()), 3, 2, 1))
    r["torch"] = torch.__version__
    for k, v in r.items():
        print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
