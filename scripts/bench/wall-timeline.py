"""A timeline of where the driver's main thread and Spark's task threads spend a run, from a wall-clock
profile with timestamps: what happens before the first task commits (issue 15's first-commit target).

Record with async-profiler (Maven Central: tools.profiler:async-profiler, linux-x64/libasyncProfiler.so) in
JFR format, convert with the JDK's `jfr` tool, then:

  VOLPOOL_JAVA_OPTS="-Xmx8g -agentpath:/path/libasyncProfiler.so=start,event=wall,interval=2ms,jfr,file=/tmp/w.jfr" \\
    scripts/volpool --conf ...
  jfr print --events profiler.WallClockSample --json --stack-depth 96 /tmp/w.jfr > /tmp/w.json
  python3 scripts/bench/wall-timeline.py /tmp/w.json [BUCKET_MS=100]

Per bucket: the main thread's activity (its deepest frame of volpool, Parquet, Spark or Hadoop), how many
task threads are busy (not parked between tasks), and what the busy ones do most.
"""
import collections
import datetime
import json
import sys

path = sys.argv[1]
bucket_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
IDLE = ("java/util/concurrent/SynchronousQueue", "java/util/concurrent/ThreadPoolExecutor.getTask")


def when(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")[:26] + "+00:00").timestamp()


def label(frames):
    names = []
    for f in frames:
        m = f.get("method") or {}
        t = (m.get("type") or {}).get("name") or ""
        names.append(t.replace(".", "/") + "." + (m.get("name") or ""))
    if any(n.startswith(IDLE) for n in names):
        return "idle"
    for n in names:  # leaf first: the deepest frame of volpool, Parquet, Spark or Hadoop
        if n.startswith(("io/volpool/", "org/apache/")):
            return n.split("/")[-1]
    return names[0].split("/")[-1] if names else "?"


events = json.load(open(path))["recording"]["events"]
rows = []
for e in events:
    v = e["values"]
    th = v["sampledThread"]
    name = th.get("javaName") or th.get("osName") or "?"
    if name == "main":
        kind = "main"
    elif name.startswith("Executor task launch worker"):
        kind = "task"
    else:
        continue
    rows.append((when(v["startTime"]), kind, name, label(v["stackTrace"]["frames"]), int(v.get("samples", 1))))
rows.sort()
t0 = rows[0][0]
buckets = collections.defaultdict(lambda: {"main": collections.Counter(), "task": collections.Counter(), "busy": set()})
for t, kind, name, lab, n in rows:
    b = buckets[int((t - t0) * 1000 // bucket_ms)]
    b[kind][lab] += n
    if kind == "task" and lab != "idle":
        b["busy"].add(name)
print(f"{len(rows)} samples of the main and task threads from {datetime.datetime.utcfromtimestamp(t0).time()} UTC,"
      f" buckets of {bucket_ms:.0f} ms")
for k in sorted(buckets):
    b = buckets[k]
    main = b["main"].most_common(1)[0][0] if b["main"] else "-"
    tasks = ", ".join(f"{lab} {c}" for lab, c in b["task"].most_common(4) if lab != "idle")
    print(f"{k * bucket_ms / 1000:6.2f} s  main: {main:40s} tasks busy: {len(b['busy']):2d}  {tasks}")
