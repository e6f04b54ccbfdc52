"""Can the GPU read input pages by DMA straight from the page cache (issue 15's next step)?

On the GPU machine (PyTorch there, no Java needed): FILES files of MIB MiB in /dev/shm, then for each way
of getting them to the device the wall time, the host CPU time it costs, and GB/s:

  pread   os.preadv into pinned memory (what volpool's reader does), then a copy to the device;
  mapped  the file mapped read-only and registered with the driver (cudaHostRegister, read-only flag),
          a copy to the device straight from the page-cache pages, then unregistered.

Each way runs on one thread, then on THREADS threads at once (one file each), after one untimed warm-up
round. Prints one line per run; CPU time is the process's (all threads), so core-seconds per GB compare
with the task-seconds per GB of the job's summaries (docs/benchmarks.md).

  python3 scripts/bench/page-cache-dma.py [FILES=16] [MIB=256] [THREADS=16]
"""
import concurrent.futures
import mmap
import os
import sys
import time

import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore", message="The given NumPy array is not writable")

FILES = int(sys.argv[1]) if len(sys.argv) > 1 else 16
MIB = int(sys.argv[2]) if len(sys.argv) > 2 else 256
THREADS = int(sys.argv[3]) if len(sys.argv) > 3 else 16
READ_ONLY = 8  # cudaHostRegisterReadOnly
DIR = "/dev/shm/page-cache-dma"
SIZE = MIB << 20

cudart = torch.cuda.cudart()
torch.cuda.init()
os.makedirs(DIR, exist_ok=True)
paths = []
block = np.random.default_rng(1).integers(0, 255, SIZE, dtype=np.uint8).tobytes()
for i in range(FILES):
    p = f"{DIR}/f{i:02d}.bin"
    with open(p, "wb") as f:
        f.write(block)
    paths.append(p)
del block
print(f"{FILES} files of {MIB} MiB in {DIR}; {torch.cuda.get_device_name(0)}; {os.cpu_count()} cores", flush=True)
dev = [torch.empty(SIZE, dtype=torch.uint8, device="cuda") for _ in range(min(FILES, THREADS))]
pinned = [torch.empty(SIZE, dtype=torch.uint8, pin_memory=True) for _ in range(min(FILES, THREADS))]
streams = [torch.cuda.Stream() for _ in range(min(FILES, THREADS))]


def by_pread(i, slot):
    with open(paths[i], "rb", buffering=0) as f:
        view = memoryview(pinned[slot].numpy())
        n = os.preadv(f.fileno(), [view], 0)
        assert n == SIZE, n
    with torch.cuda.stream(streams[slot]):
        dev[slot].copy_(pinned[slot], non_blocking=True)
    streams[slot].synchronize()
    return 0.0


def by_mapping(i, slot):
    with open(paths[i], "rb") as f:
        m = mmap.mmap(f.fileno(), SIZE, prot=mmap.PROT_READ)
    arr = np.frombuffer(m, dtype=np.uint8)
    ptr = arr.ctypes.data
    t0 = time.perf_counter()
    err = cudart.cudaHostRegister(ptr, SIZE, READ_ONLY)
    if int(err) != 0:
        raise RuntimeError(f"cudaHostRegister of a read-only mapping of {paths[i]} failed: {err}")
    reg = time.perf_counter() - t0
    src = torch.from_numpy(arr)
    assert src.is_pinned(), "a registered mapping should count as pinned"
    with torch.cuda.stream(streams[slot]):
        dev[slot].copy_(src, non_blocking=True)
    streams[slot].synchronize()
    cudart.cudaHostUnregister(ptr)
    del src, arr
    m.close()
    return reg


def check(slot, i):
    """The device copy holds the file's bytes (first and last MiB)."""
    with open(paths[i], "rb") as f:
        head = f.read(1 << 20)
        f.seek(SIZE - (1 << 20))
        tail = f.read(1 << 20)
    got = dev[slot].cpu().numpy()
    assert got[: 1 << 20].tobytes() == head and got[-(1 << 20):].tobytes() == tail, f"device copy of {paths[i]} differs"


def run(name, fn, threads):
    n = min(FILES, threads)
    torch.cuda.synchronize()
    w0, c0 = time.perf_counter(), time.process_time()
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        regs = list(ex.map(lambda i: fn(i, i % n), range(n)))
    w1, c1 = time.perf_counter(), time.process_time()
    check(n - 1, n - 1)
    gb = n * SIZE / 1e9
    extra = f", registering {sum(regs) / gb:.3f} s per GB (summed over threads)" if any(regs) else ""
    print(f"{name:7s} {n:2d} thread(s): {gb:.2f} GB in {w1 - w0:.3f} s = {gb / (w1 - w0):.2f} GB/s,"
          f" host CPU {(c1 - c0) / gb:.3f} core-s per GB{extra}", flush=True)


for name, fn in (("pread", by_pread), ("mapped", by_mapping)):
    try:
        run(name + "*", fn, 1)  # warm-up, also of the code paths
        for threads in (1, THREADS):
            run(name, fn, threads)
            run(name, fn, threads)
    except (RuntimeError, AssertionError) as e:
        print(f"{name}: failed: {e}", flush=True)
for p in paths:
    os.remove(p)
os.rmdir(DIR)
