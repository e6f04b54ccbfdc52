# python3 readers-by-loan.py FIRST.txt SECOND.txt: the slab read threads' samples under PositionedRows.each in two
# collapsed wall-clock profiles (async-profiler, 5 ms), by what else is on the stack (a sample may count in two)
import collections, sys
for name, path in zip(("first loan", "second loan"), sys.argv[1:3]):
    fr = collections.Counter(); n = 0
    for line in open(path):
        stack, _, c = line.rstrip().rpartition(" ")
        f = stack.split(";")
        if "slab-reader" not in f[0]:
            continue
        c = int(c); fs = set(f[1:])
        if any("PositionedRows.each" in x for x in fs):
            n += c
            if any("monitorenter" in x or "monitor_locking" in x for x in fs): fr["waiting on the rows lock"] += c
            if any("PositionedRows.openNext" in x for x in fs): fr["opening rows"] += c
            if any("FileDispatcherImpl.pread" in x for x in fs): fr["pread"] += c
            if any("readFooter" in x for x in fs): fr["footer parsing"] += c
    print(f"{name}: reading rows {n*5/1000:.2f} s: " + ", ".join(f"{k} {v*5/1000:.2f}" for k, v in fr.items()))
