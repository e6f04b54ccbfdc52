#!/usr/bin/env python3
"""Writes the project's own golden cases for maxpool3d (and fused then maxpool3d) with PyTorch.

Run with Debian's python3-torch (apt-get install python3-torch):
    /usr/bin/python3 scripts/golden/make-maxpool-golden.py udf/src/test/resources/golden
Same layout as ../shared/golden (see its README): case.json, input.npy, expected.npy, and for the
fused case model.safetensors. The expected output is PyTorch's float64 result rounded to float32;
a max is exact, so it equals the float32 result.
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F


def save_safetensors(path, tensors):
    """The safetensors format (an 8-byte header length, a JSON header, raw little-endian data)."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        a = np.ascontiguousarray(t.detach().numpy().astype("<f4"))
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def maxpool(x, p):
    return F.max_pool3d(x, p["kernel_size"], p["stride"], p["padding"], p["dilation"], p["ceil_mode"])


def write(root, name, case, x, y, model=None):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    case = dict(case)
    case["input_shape"] = list(x.shape)
    case["expected_shape"] = list(y.shape)
    case["torch_version"] = torch.__version__
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
    np.save(os.path.join(d, "input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(d, "expected.npy"), y.numpy().astype(np.float32))
    if model is not None:
        save_safetensors(os.path.join(d, "model.safetensors"), model)


def pool_case(root, name, shape, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, fill=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float32)
    if fill is not None:
        fill(x)
    p = {"kernel_size": kernel_size, "stride": stride if stride is not None else kernel_size, "padding": padding,
         "dilation": dilation, "ceil_mode": ceil_mode}
    y = maxpool(x.double(), p).float()
    write(root, name, {"op": "maxpool3d", "maxpool3d": p}, x, y)


def nonfinite(x):
    x[0, 0, 1, 2, 3] = float("nan")
    x[0, 1, 3:6, 0:3, 0:3] = float("-inf")  # a window of -inf only gives -inf
    x[0, 1, 0, 0, 0] = float("inf")
    x[0, 0, 5, 5, 1] = float("nan")
    x[0, 0, 5, 5, 2] = float("inf")       # NaN wins over +inf, as in PyTorch
    x[0, 2, :, 6:, :] = -1e30


def fused_maxpool_case(root, name, seed=1):
    g = torch.Generator().manual_seed(seed)
    cin, cout, k, s, p, op, pk = 3, 5, 3, 2, 1, 1, 2
    conv = torch.nn.ConvTranspose3d(cin, cout, k, s, p, op)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g) * 0.2)
        conv.bias.copy_(torch.randn(conv.bias.shape, generator=g) * 0.1)
    scale1 = torch.tensor(0.75)
    bias = torch.randn(cout, 1, 1, 1, generator=g) * 0.1
    scale2 = torch.tensor(1.5)
    x = torch.randn(2, cin, 6, 7, 9, generator=g)
    mp = {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1, "ceil_mode": True}
    with torch.no_grad():
        c = F.conv_transpose3d(x.double(), conv.weight.double(), conv.bias.double(), s, p, op) * scale1.double()
        f = (F.avg_pool3d(c, pk) + bias.double()) * scale2.double()
        y = maxpool(f, mp).float()
    fused = {"in_channels": cin, "out_channels": cout, "kernel_size": k, "stride": s, "padding": p,
             "output_padding": op, "pool_kernel": pk, "scale1": float(scale1), "scale2": float(scale2)}
    model = {"conv_transpose.weight": conv.weight, "conv_transpose.bias": conv.bias, "scale1": scale1,
             "bias": bias, "scale2": scale2}
    write(root, name, {"op": "fused,maxpool3d", "fused": fused, "maxpool3d": mp}, x, y, model)


def main(root):
    pool_case(root, "maxpool_k3s2p1", (2, 3, 9, 12, 16), 3, 2, 1)
    pool_case(root, "maxpool_odd_ceil", (1, 2, 7, 9, 11), 3, 2, 1, ceil_mode=True, seed=2)
    pool_case(root, "maxpool_dilation2", (1, 2, 11, 10, 13), 3, 1, 1, dilation=2, seed=3)
    pool_case(root, "maxpool_dilation2_ceil", (1, 2, 12, 9, 10), 2, 3, 1, dilation=2, ceil_mode=True, seed=4)
    pool_case(root, "maxpool_k2s1p1", (1, 3, 5, 6, 7), 2, 1, 1, seed=5)
    pool_case(root, "maxpool_default_stride", (1, 1, 8, 8, 9), 2, seed=6)
    pool_case(root, "maxpool_k4s3p2_ceil", (1, 2, 10, 11, 12), 4, 3, 2, ceil_mode=True, seed=7)
    pool_case(root, "maxpool_nonfinite", (1, 3, 8, 9, 10), 3, 2, 1, fill=nonfinite, seed=8)
    fused_maxpool_case(root, "pipeline_fused_maxpool")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "udf/src/test/resources/golden")
