"""Sums a wall-clock profile of Spark's task threads: where a task's time goes, waiting included.

Record one with async-profiler (Maven Central: tools.profiler:async-profiler, its linux-x64/libasyncProfiler.so)
in wall-clock mode, e.g. for the embedded job:

  VOLPOOL_JAVA_OPTS="-Xmx8g -agentpath:/path/libasyncProfiler.so=start,event=wall,interval=2ms,threads,collapsed,file=/tmp/wall.txt" \\
    scripts/volpool --conf ...
  python3 scripts/bench/wall-profile.py /tmp/wall.txt [INTERVAL_MS=2] [TOP=40]

Counts only threads named "Executor task launch worker ...", leaving out the samples of such a thread
parked in Spark's pool between tasks (SynchronousQueue), which are idle time, not a task's. Prints the
busy task-seconds, then the inclusive time of each frame of volpool, parquet, snappy, the JDK's NIO and
the kernel calls that move bytes (read, write, pread), and the leaf frames.
"""
import collections
import re
import sys

path = sys.argv[1]
ms = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
KEEP = ("io/volpool", "org/apache/parquet", "org/xerial", "com/github/luben", "java/nio", "sun/nio", "java/util/zip",
        "__GI_write", "__pread", "__libc_pread", "__memmove", "updateBytesCRC32", "Copy::fill")
# THREADS (a fourth argument "threads"): first the samples of every thread, by name with its digits left out
# (for a CPU profile, event=cpu: where the machine's cores went)
groups = collections.Counter() if len(sys.argv) > 4 and sys.argv[4] == "threads" else None
incl, leaf = collections.Counter(), collections.Counter()
busy = idle = 0
for line in open(path, errors="replace"):
    stack, _, n = line.rstrip().rpartition(" ")
    if not stack or not n.isdigit():
        continue
    n = int(n)
    frames = [re.sub(r"_\[[a-z0-9]\]$", "", f) for f in stack.split(";")]
    if groups is not None:
        groups[re.sub(r"[0-9]+", "N", frames[0].split(" tid=")[0])] += n
    if not frames[0].startswith("[Executor task launch worker"):
        continue
    if any("SynchronousQueue" in f for f in frames):
        idle += n
        continue
    busy += n
    for f in set(frames[1:]):
        if f.startswith(KEEP):
            incl[f] += n
    leaf[frames[-1]] += n
if groups is not None:
    print("-- every thread, by name (s)")
    for k, v in groups.most_common(15):
        print(f"{v * ms / 1000:7.2f} s  {k}")
if busy == 0:
    sys.exit(f"{path}: no busy samples of Spark task threads")
print(f"task threads: {busy * ms / 1000:.2f} task-s busy, {idle * ms / 1000:.2f} s idle between tasks")
print("-- inclusive")
for k, v in incl.most_common(top):
    print(f"{v * ms / 1000:7.2f} s {100 * v / busy:5.1f}%  {k}")
print("-- leaf")
for k, v in leaf.most_common(top // 2):
    print(f"{v * ms / 1000:7.2f} s {100 * v / busy:5.1f}%  {k}")
