#!/usr/bin/env python3
"""Writes the project's dtype references with PyTorch: conversions and golden cases of narrow inputs.

Run with Debian's python3-torch (apt-get install python3-torch):
    /usr/bin/python3 scripts/golden/make-dtype-golden.py udf/src/test/resources
Writes
- dtypes/<dtype>.npy and dtypes/<dtype>_f32.npy: stored values (every bit pattern of the 8- and
  16-bit types; extremes, rounding ties and random values of int32 and float64) and PyTorch's
  tensor.to(torch.float32) of them. bfloat16 has no numpy dtype: its values are stored as <u2 bit
  patterns. torch 1.13 has no uint16: there numpy's astype(float32) is used (exact, as torch's).
- dtypes/f32_to_float16.npy, dtypes/f32_to_bfloat16.npy: float32 values (dtypes/f32_narrow_in.npy)
  rounded by PyTorch's .to(torch.float16) / .to(torch.bfloat16), as <u2 bit patterns.
- golden/dtype_*: golden cases (the layout of ../shared/golden) whose input.npy has a narrow dtype;
  expected.npy is the operator's float64 result on input.to(torch.float32), rounded to float32.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

mp = import_module("make-maxpool-golden")


def to_f32(name, a):
    if name == "uint16":
        return a.astype(np.float32)
    if name == "bfloat16":
        t = torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
        return t.to(torch.float32).numpy()
    return torch.from_numpy(a).to(torch.float32).numpy()


def conversions(root):
    d = os.path.join(root, "dtypes")
    os.makedirs(d, exist_ok=True)
    g = np.random.default_rng(0)
    stored = {
        "uint8": np.arange(256, dtype=np.uint8),
        "int8": np.arange(-128, 128, dtype=np.int8),
        "uint16": np.arange(65536, dtype=np.uint32).astype(np.uint16),
        "int16": np.arange(-32768, 32768, dtype=np.int32).astype(np.int16),
        "float16": np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16),
        "bfloat16": np.arange(65536, dtype=np.uint32).astype(np.uint16),
    }
    i32 = [-2**31, 2**31 - 1, 0, 1, -1, 2**24, 2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**25 + 2, 2**25 + 6,
           33554435, 123456789, -987654321]
    stored["int32"] = np.concatenate([np.array(i32, np.int32), g.integers(-2**31, 2**31, 4000, dtype=np.int64)
                                      .astype(np.int32)])
    f64 = [0.0, -0.0, 1.0, -1.0, 1e300, -1e300, 1e-50, -1e-50, 5e-324, 3.4028234663852886e38,
           3.4028235677973366e38, 3.402823567797337e38, 1 + 2**-24, 1 + 3 * 2**-24, 1 + 2**-24 + 2**-52,
           2**-149, 2**-150, 2**-150 * 1.5, 1.17549435e-38, float("inf"), float("-inf"), float("nan")]
    stored["float64"] = np.concatenate([np.array(f64), g.standard_normal(2000) * 10.0 ** g.integers(-45, 39, 2000)])
    for name, a in stored.items():
        np.save(os.path.join(d, name + ".npy"), a)
        np.save(os.path.join(d, name + "_f32.npy"), to_f32(name, a))
    # float32 -> float16 / bfloat16, as torch rounds
    e = 2.0 ** g.integers(-30, 20, 6000)
    x = np.concatenate([
        np.array([0.0, -0.0, 1.0, 65504.0, 65519.996, 65520.0, 65536.0, 1e9, -1e9, 6.1035156e-05, 5.9604645e-08,
                  2.9802322e-08, 2.9802326e-08, 1e-8, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8,
                  3.3895314e38, 3.4028235e38, float("inf"), float("-inf"), float("nan")], np.float32),
        (g.standard_normal(6000) * e).astype(np.float32),
        np.arange(0, 1 << 31, 65537 * 7, dtype=np.int64).astype(np.uint32).view(np.float32)])
    np.save(os.path.join(d, "f32_narrow_in.npy"), x)
    t = torch.from_numpy(x)
    np.save(os.path.join(d, "f32_to_float16.npy"), t.to(torch.float16).view(torch.int16).numpy().view(np.uint16))
    np.save(os.path.join(d, "f32_to_bfloat16.npy"), t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16))


def write(root, name, case, x_stored, y, model=None):
    d = os.path.join(root, "golden", name)
    os.makedirs(d, exist_ok=True)
    case = dict(case)
    case["input_dtype"] = str(x_stored.dtype)
    case["input_shape"] = list(x_stored.shape)
    case["expected_shape"] = list(y.shape)
    case["torch_version"] = torch.__version__
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
    np.save(os.path.join(d, "input.npy"), x_stored)
    np.save(os.path.join(d, "expected.npy"), y.numpy().astype(np.float32))
    if model is not None:
        mp.save_safetensors(os.path.join(d, "model.safetensors"), model)


def wide(x_stored):
    return torch.from_numpy(to_f32(str(x_stored.dtype), x_stored)).double()


def pool_cases(root):
    g = np.random.default_rng(1)
    avg = {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": False, "count_include_pad": True}
    mx = {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1, "ceil_mode": False}
    shape = (2, 3, 9, 10, 12)

    x = g.integers(-32768, 32768, shape).astype(np.int16)
    x[0, 0, 0, 0, :4] = [-32768, 32767, -32768, 32767]
    y = F.avg_pool3d(wide(x), 3, 2, 1, False, True).float()
    write(root, "dtype_int16_avgpool", {"op": "avgpool3d", "avgpool": avg}, x, y)

    x = g.integers(0, 65536, shape).astype(np.uint16)
    x[1, 2, 4, 5, :3] = 65535
    y = mp.maxpool(wide(x), mx).float()
    write(root, "dtype_uint16_maxpool", {"op": "maxpool3d", "maxpool3d": mx}, x, y)

    x = g.integers(-128, 128, shape).astype(np.int8)
    y = F.avg_pool3d(wide(x), 3, 2, 1, False, True).float()
    write(root, "dtype_int8_avgpool", {"op": "avgpool3d", "avgpool": avg}, x, y)

    x = g.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
    y = F.avg_pool3d(wide(x), 3, 2, 1, False, True).float()
    write(root, "dtype_int32_avgpool", {"op": "avgpool3d", "avgpool": avg}, x, y)

    x = (g.standard_normal(shape) * 1e3).astype(np.float64)
    y = mp.maxpool(wide(x), mx).float()
    write(root, "dtype_float64_maxpool", {"op": "maxpool3d", "maxpool3d": mx}, x, y)

    # float16 with its extremes: subnormals, the largest finite, infinities and NaN (max pool keeps them exact)
    x = (g.standard_normal(shape) * 100).astype(np.float16)
    x[0, 0, 0, 0, :6] = np.array([0x0001, 0x03ff, 0x7bff, 0xfbff, 0x8001, 0x0400], np.uint16).view(np.float16)
    x[0, 1, 2, 3, 4] = np.inf
    x[1, 0, 5, 5, 5] = -np.inf
    x[1, 2, 8, 9, 11] = np.nan
    y = mp.maxpool(wide(x), mx).float()
    write(root, "dtype_float16_maxpool_nonfinite", {"op": "maxpool3d", "maxpool3d": mx}, x, y)


def fused_cases(root):
    g = torch.Generator().manual_seed(5)
    cin, cout, k, s, p, op, pk = 3, 4, 3, 2, 1, 1, 2
    w = torch.randn(cin, cout, k, k, k, generator=g) * 0.2
    cb = torch.randn(cout, generator=g) * 0.1
    scale1, scale2 = torch.tensor(0.5), torch.tensor(2.0)
    bias = torch.randn(cout, 1, 1, 1, generator=g) * 0.1
    model = {"conv_transpose.weight": w, "conv_transpose.bias": cb, "scale1": scale1, "bias": bias, "scale2": scale2}
    fused = {"in_channels": cin, "out_channels": cout, "kernel_size": k, "stride": s, "padding": p,
             "output_padding": op, "pool_kernel": pk, "scale1": float(scale1), "scale2": float(scale2)}
    rng = np.random.default_rng(2)
    shape = (2, cin, 5, 6, 7)

    def run(x):
        c = F.conv_transpose3d(wide(x), w.double(), cb.double(), s, p, op) * scale1.double()
        return (F.avg_pool3d(c, pk) + bias.double()) * scale2.double()

    x = rng.integers(0, 256, shape).astype(np.uint8)
    x[0, 0, 0, 0, :2] = [0, 255]
    write(root, "dtype_uint8_fused", {"op": "fused", "fused": fused}, x, run(x).float(), model)

    # float16 with subnormals and large values through fused then avgpool3d
    x = (rng.standard_normal(shape) * 30).astype(np.float16)
    x[0, 0, 0, 0, :3] = np.array([0x0001, 0x83ff, 0x7bff], np.uint16).view(np.float16)
    avg = {"kernel_size": 2, "stride": 2, "padding": 0, "ceil_mode": True, "count_include_pad": True}
    y = F.avg_pool3d(run(x), 2, 2, 0, True, True).float()
    write(root, "dtype_float16_pipeline", {"op": "pipeline", "fused": fused, "avgpool": avg}, x, y, model)

    x = rng.integers(-32768, 32768, shape).astype(np.int16)
    mx = {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1, "ceil_mode": True}
    y = mp.maxpool(run(x), mx).float()
    write(root, "dtype_int16_fused_maxpool", {"op": "fused,maxpool3d", "fused": fused, "maxpool3d": mx}, x, y, model)


def rescale_cases(root):
    """dtypes/rescale_*: golden cases with a rescale, value * slope + intercept in float32 as PyTorch computes it
    (x.to(torch.float32) * slope + intercept); case.json's "rescale" holds [slope, intercept] per volume."""
    g = np.random.default_rng(3)
    avg = {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": False, "count_include_pad": True}
    shape = (3, 2, 8, 9, 10)

    def one(name, x, rescale, op_case, run):
        d = os.path.join(root, "dtypes", name)
        os.makedirs(d, exist_ok=True)
        ys = []
        for i in range(x.shape[0]):
            v = torch.from_numpy(to_f32(str(x.dtype), x[i:i + 1])) * torch.tensor(rescale[i][0], dtype=torch.float32) \
                + torch.tensor(rescale[i][1], dtype=torch.float32)
            ys.append(run(v.double()))
        y = torch.cat(ys).float()
        case = dict(op_case, input_dtype=str(x.dtype), input_shape=list(x.shape), expected_shape=list(y.shape),
                    rescale=rescale, torch_version=torch.__version__)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(case, f, indent=1)
        np.save(os.path.join(d, "input.npy"), x)
        np.save(os.path.join(d, "expected.npy"), y.numpy().astype(np.float32))

    pool = lambda v: F.avg_pool3d(v, 3, 2, 1, False, True)  # noqa: E731
    x = g.integers(-2048, 3072, shape).astype(np.int16)
    x[0, 0, 0, 0, :2] = [-32768, 32767]
    one("rescale_int16_fixed_avgpool", x, [[1.0, -1024.0]] * 3, {"op": "avgpool3d", "avgpool": avg}, pool)
    x = g.integers(0, 65536, shape).astype(np.uint16)
    one("rescale_uint16_columns_avgpool", x, [[0.5, -1024.0], [2.5, 10.25], [0.001, 0.0]],
        {"op": "avgpool3d", "avgpool": avg}, pool)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "udf/src/test/resources"
    conversions(out)
    pool_cases(out)
    fused_cases(out)
    rescale_cases(out)
