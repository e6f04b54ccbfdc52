#!/usr/bin/env python3
"""Write and read volumes stored across rows, the Parquet layout volpool uses for volumes of any size.

Each row holds planes [d0, d1) along D of every channel of the volume its id names:
    id     string          the volume's name (rows of one volume share it)
    shape  list<int32>     the WHOLE volume's [C, D, H, W]
    dtype  string          "float32" (volpool's output: its output.dtype, or the input's stored dtype)
    d0     int32           first plane along D in this row
    d1     int32           one past the last plane
    data   binary          planes [d0, d1) of every channel: [C, d1-d0, H, W], little-endian float32, C order
Rows of one volume may be in any order and in any files; together they cover [0, D) once.

    python3 volumes_across_rows.py write DIR [C D H W] [planes-per-row]   # a random volume as rows
    python3 volumes_across_rows.py read DIR                               # reassemble every volume, print a digest
    python3 volumes_across_rows.py write-digest DTYPE C,D,H,W             # the digest of `write`'s volume in DTYPE
"""
import hashlib
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([
    ("id", pa.string()), ("shape", pa.list_(pa.int32())), ("dtype", pa.string()),
    ("d0", pa.int32()), ("d1", pa.int32()), ("data", pa.binary()),
])


def write_volume(path, vid, vol, planes_per_row):
    """Writes vol [C, D, H, W] as rows of planes_per_row planes, one row group per row (rows can be large).

    Uncompressed and without dictionary encoding, so volpool streams each row's planes from the file
    (pyarrow's default dictionary puts a large value in a dictionary page, read through the heap)."""
    c, d, h, w = vol.shape
    with pq.ParquetWriter(path, SCHEMA, compression="none", use_dictionary=False) as out:
        for d0 in range(0, d, planes_per_row):
            d1 = min(d, d0 + planes_per_row)
            part = np.ascontiguousarray(vol[:, d0:d1], dtype="<f4")
            out.write_table(pa.table({
                "id": [vid], "shape": [[c, d, h, w]], "dtype": ["float32"],
                "d0": [d0], "d1": [d1], "data": [part.tobytes()],
            }, schema=SCHEMA))


def values(data, dtype):
    """A row's values as numpy reads them: its dtype column names them ("float32", "float16", "bfloat16", "int16",
    "uint16", "uint8"), little-endian. numpy has no bfloat16: its 16 bits are widened to float32 exactly
    (torch.frombuffer(data, dtype=torch.bfloat16) reads them as they are)."""
    if dtype == "bfloat16":
        return (np.frombuffer(data, dtype="<u2").astype("<u4") << 16).view("<f4")
    return np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"))


def read_volumes(folder):
    """Every volume in folder (searched recursively), reassembled from its rows: {id: array [C, D, H, W]} of the
    rows' dtype (float32 for bfloat16)."""
    table = pq.ParquetDataset(folder).read(columns=["id", "shape", "dtype", "d0", "d1", "data"])
    vols, seen = {}, {}
    for row in table.to_pylist():
        c, d, h, w = row["shape"]
        v = values(row["data"], row["dtype"])
        vol = vols.setdefault(row["id"], np.zeros((c, d, h, w), dtype=v.dtype))
        d0, d1 = row["d0"], row["d1"]
        vol[:, d0:d1] = v.reshape(c, d1 - d0, h, w)
        seen.setdefault(row["id"], []).append((d0, d1))
    for vid, ranges in seen.items():
        ranges.sort()
        covered = 0
        for d0, d1 in ranges:
            assert d0 == covered, f"volume {vid}: planes [{covered}, {d0}) missing or overlapping at {d0}"
            covered = d1
        assert covered == vols[vid].shape[1], f"volume {vid}: planes [{covered}, {vols[vid].shape[1]}) missing"
    return vols


def digest(vol):
    return hashlib.sha256(np.ascontiguousarray(vol, dtype="<f4").tobytes()).hexdigest()


def cast(vol, dtype):
    """vol (float32) as a run with spark.volpool.output.dtype=dtype writes it, widened back to float32: float16 by
    numpy's (IEEE, round to nearest even) conversion, bfloat16 by rounding the float32 bits to nearest even, as
    PyTorch's .to(torch.bfloat16) does (finite values)."""
    if dtype == "float16":
        return vol.astype("<f2").astype("<f4")
    if dtype == "bfloat16":
        u = np.ascontiguousarray(vol, dtype="<f4").view("<u4").astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return u.astype("<u4").view("<f4")
    return vol


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "write":
        folder = sys.argv[2]
        c, d, h, w = (int(x) for x in sys.argv[3:7]) if len(sys.argv) >= 7 else (2, 40, 64, 64)
        per_row = int(sys.argv[7]) if len(sys.argv) >= 8 else 7
        os.makedirs(folder, exist_ok=True)
        vol = np.random.default_rng(5).standard_normal((c, d, h, w), dtype=np.float32)
        write_volume(os.path.join(folder, "vol-a.parquet"), "vol-a", vol, per_row)
        print("vol-a", digest(vol))
    elif len(sys.argv) == 4 and sys.argv[1] == "write-digest":
        # the digest of the volume `write` makes, as a run with output.dtype=argv[2] writes it (argv[3]: C,D,H,W)
        c, d, h, w = (int(x) for x in sys.argv[3].split(","))
        vol = np.random.default_rng(5).standard_normal((c, d, h, w), dtype=np.float32)
        print("vol-a", digest(cast(vol, sys.argv[2])))
    elif len(sys.argv) == 3 and sys.argv[1] == "read":
        for vid, vol in sorted(read_volumes(sys.argv[2]).items()):
            print(vid, digest(vol))
    else:
        sys.exit(__doc__)
