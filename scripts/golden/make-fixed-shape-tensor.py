#!/usr/bin/env python3
"""Writes each dtype golden case's input as pyarrow writes an arrow.fixed_shape_tensor column.

    python3 scripts/golden/make-fixed-shape-tensor.py udf/src/test/resources/golden OUT

For every case folder dtype_* under the first argument whose input.npy has a dtype Arrow knows
(uint8, int8, uint16, int16, int32, float16, float64; bfloat16 has none), writes
OUT/<case>/volumes_fixed_shape_tensor.parquet: one row per volume, columns id (string, v00, v01, ...)
and tensor (pa.fixed_shape_tensor(value type, [C, D, H, W])), the layout users get from
pa.FixedShapeTensorArray.from_numpy_ndarray. Needs numpy and pyarrow (the GPU machine has both);
the files are committed beside the cases' other references, so the tests need neither.
"""
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main(src, out):
    for name in sorted(os.listdir(src)):
        if not name.startswith("dtype_"):
            continue
        with open(os.path.join(src, name, "case.json")) as f:
            if json.load(f).get("input_dtype") == "bfloat16":
                continue  # stored as <u2 bit patterns: Arrow has no bfloat16
        x = np.load(os.path.join(src, name, "input.npy"))
        x = x.astype(x.dtype.newbyteorder("=")) if x.dtype.byteorder == ">" else x
        try:
            tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(x))
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError) as e:
            print(f"{name}: {x.dtype} skipped ({e})")
            continue
        ids = pa.array([f"v{i:02d}" for i in range(x.shape[0])], pa.string())
        table = pa.Table.from_arrays([ids, tensor], names=["id", "tensor"])
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        pq.write_table(table, os.path.join(d, "volumes_fixed_shape_tensor.parquet"))
        print(f"{name}: {x.dtype} {list(x.shape)} -> {table.schema.field('tensor').type}; pyarrow {pa.__version__}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
