"""The machine's own limits beside a benchmark (issue 15), in the same call: memcpy by one thread into a
reused buffer and into fresh pages, and read() of a file by one thread into a reused 8 MiB buffer.

  python3 scripts/bench/machine-limits.py FILE [GIB=1]

FILE should be on the filesystem the benchmark reads (e.g. one of its input files on /dev/shm); it is
read whole, twice, and the second pass is reported. Prints one line per figure, in GB/s (10^9 bytes).
"""
import os
import sys
import time

import numpy as np

path = sys.argv[1]
n = int(float(sys.argv[2]) * (1 << 30)) if len(sys.argv) > 2 else 1 << 30
src = np.ones(n, dtype=np.uint8)
dst = np.empty_like(src)
np.copyto(dst, src)  # touch the destination once
best = 0.0
for _ in range(5):
    t0 = time.perf_counter()
    np.copyto(dst, src)
    best = max(best, n / (time.perf_counter() - t0) / 1e9)
print(f"memcpy, one thread, reused buffer: {best:.2f} GB/s ({n >> 20} MiB, best of 5)")
fresh = 0.0
for _ in range(3):
    t0 = time.perf_counter()
    f = np.empty_like(src)  # pages the kernel has not given this process yet: the copy faults them in
    np.copyto(f, src)
    fresh = max(fresh, n / (time.perf_counter() - t0) / 1e9)
    del f
print(f"memcpy, one thread, fresh pages: {fresh:.2f} GB/s ({n >> 20} MiB, best of 3)")
buf = bytearray(8 << 20)
view = memoryview(buf)
for rep in range(2):
    total = 0
    t0 = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            k = os.readv(fd, [view])
            if k == 0:
                break
            total += k
    finally:
        os.close(fd)
    secs = time.perf_counter() - t0
print(f"read(), one thread, reused 8 MiB buffer: {total / secs / 1e9:.2f} GB/s ({total >> 20} MiB of {path})")
