"""Prints a checksum of a volpool Parquet output (binary layout): SHA-256 over every row's id, shape and data,
in id order, and the row count. Two outputs with the same line hold the same volumes.  Usage: output-checksum.py DIR"""
import hashlib, sys
import pyarrow.dataset as ds
t = ds.dataset(sys.argv[1], format="parquet").to_table(columns=["id", "shape", "data"])
rows = sorted(zip(t["id"].to_pylist(), t["shape"].to_pylist(), t["data"].to_pylist()))
h = hashlib.sha256()
for i, s, d in rows:
    h.update(str(i).encode()); h.update(str(s).encode()); h.update(d)
print(f"rows={len(rows)} sha256={h.hexdigest()}")
