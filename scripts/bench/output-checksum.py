"""Prints a checksum of a volpool Parquet output (binary layout): SHA-256 over every row's id, shape and the
SHA-256 of its data, in id order, and the row count. Two outputs with the same line hold the same volumes.
Streams the files (one worker process per file), so outputs of tens of GiB need no more memory than a batch.
  Usage: output-checksum.py DIR [PROCESSES]"""
import hashlib, os, sys
from multiprocessing import Pool
import pyarrow.dataset as ds


def rows(path):
    out = []
    for b in ds.dataset(path, format="parquet").to_batches(columns=["id", "shape", "data"], batch_size=256):
        for i, s, d in zip(b.column(0).to_pylist(), b.column(1).to_pylist(), b.column(2)):
            out.append((str(i), str(s), hashlib.sha256(memoryview(d.as_buffer())).hexdigest()))
    return out


if __name__ == "__main__":
    files = sorted(ds.dataset(sys.argv[1], format="parquet").files)
    with Pool(int(sys.argv[2]) if len(sys.argv) > 2 else min(16, os.cpu_count())) as p:
        all_rows = sorted(r for part in p.map(rows, files) for r in part)
    h = hashlib.sha256()
    for i, s, d in all_rows:
        h.update(i.encode()); h.update(s.encode()); h.update(d.encode())
    print(f"rows={len(all_rows)} sha256={h.hexdigest()}")
