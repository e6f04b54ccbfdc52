"""Writes benchmark datasets of reference volumes [3,16,32,32] in volpool's binary Parquet layout with pyarrow,
as a PyTorch user would (pyarrow defaults unless told otherwise).

  python3 scripts/bench/bench-data.py DIR COUNT FILES [--compression snappy|zstd|none] [--row-group 128] [--no-dictionary]
                                [--jobs N]   (files written by N processes at once; default 1)
                                [--incompressible]

Volume i is one of 64 random volumes [0,1) plus i (times 1 + i/2^20 with --incompressible): deterministic, distinct.
"""
import argparse, os
from multiprocessing import Pool
import numpy as np, pyarrow as pa, pyarrow.parquet as pq

ap = argparse.ArgumentParser()
ap.add_argument("dir"); ap.add_argument("count", type=int); ap.add_argument("files", type=int)
ap.add_argument("--compression", default="snappy"); ap.add_argument("--row-group", type=int, default=128)
ap.add_argument("--no-dictionary", action="store_true")
ap.add_argument("--jobs", type=int, default=1)
# volume i is one of 64 random volumes plus i: as i grows, a float32 holds fewer distinct values and Snappy
# finds a 4-byte copy every few bytes (the set compresses to ~0.9, and decoding is bound by its tags);
# --incompressible scales instead of shifting, so every value stays random-looking (measured data with noise)
ap.add_argument("--incompressible", action="store_true")
# --dtype int16: CT-like stored values (int16 in [-1024, 3072), one of 64 volumes plus i % 7), dtype column int16
ap.add_argument("--dtype", default="float32", choices=["float32", "int16"])
a = ap.parse_args()
os.makedirs(a.dir, exist_ok=True)
shape = [3, 16, 32, 32]
per = a.count // a.files
base = np.random.default_rng(0).random((64, *shape), dtype=np.float32)
base16 = np.random.default_rng(0).integers(-1024, 3072, (64, *shape), dtype=np.int16)


def write(f):
    ids, datas = [], []
    for i in range(f * per, (f + 1) * per):
        # 64 random volumes, each shifted by its index: distinct values per volume, cheap to make
        if a.dtype == "int16":
            v = base16[i % 64] + np.int16(i % 7)
        else:
            v = base[i % 64] * np.float32(1 + i * 2.0 ** -20) if a.incompressible else base[i % 64] + np.float32(i)
        ids.append(f"vol-{i:07d}"); datas.append(v.tobytes())
    t = pa.table({"id": ids, "shape": pa.array([shape] * per, pa.list_(pa.int32())), "dtype": [a.dtype] * per,
                  "data": pa.array(datas, pa.binary())})
    pq.write_table(t, f"{a.dir}/part-{f:04d}.parquet", compression=a.compression, row_group_size=a.row_group,
                   use_dictionary=not a.no_dictionary)


with Pool(a.jobs) as p:
    p.map(write, range(a.files))
print(f"wrote {per * a.files} volumes in {a.files} files to {a.dir} ({a.compression})")
