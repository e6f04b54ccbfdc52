"""What the machine did during a run's steady window (the summary's timeline: 10%-90% of the input read).

  python3 scripts/bench/steady-window.py cpu SUMMARY_JSON CPU_SAMPLES
      the cores' busy share in the window, from /proc/stat samples written by `steady-window.py sample FILE`
  python3 scripts/bench/steady-window.py sample FILE
      appends "epoch user nice system idle iowait irq softirq steal" from /proc/stat every 0.25 s until killed
  python3 scripts/bench/steady-window.py stacks DIR OUT SUMMARY_JSON...
      concatenates into OUT the collapsed stacks that async-profiler wrote every second into DIR (its options
      loop=1s,file=DIR/w-%n{9999}.txt) whose second lies mostly inside a run's window, and says which it took
  python3 scripts/bench/steady-window.py ratios STEADY_JSONL
      each run of bench-steady's dtype comparison against the float32 run of its round (run names NAME-rR, or
      NAME-rR-wN for the jobs of one JVM: then the median of its jobs after the first)
  python3 scripts/bench/steady-window.py warm SUMMARY_JSON...
      the runs of one JVM (bench's WarmRuns): the first apart (start-up: the JIT compiles while it runs), and the
      later runs' steady rates, their median and their windows pooled (volumes over seconds)

The window is placed in wall-clock time from the summary file's modification time (written as the job ends)
less the job's wall_seconds; a loop file covers the second before its modification time.
"""
import glob, json, os, re, sys, time


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def window(summary):
    """The run's steady window in wall-clock time, or None when the run was too short to have one."""
    with open(summary) as f:
        d = json.load(f)
    if not d["timeline"].get("steady_window_seconds"):
        return None
    end = os.path.getmtime(summary)
    start = end - d["wall_seconds"]
    s0, s1 = d["timeline"]["steady_window_seconds"]
    return start + s0, start + s1


def sample(path):
    with open(path, "a") as out:
        while True:
            with open("/proc/stat") as f:
                cpu = f.readline().split()[1:9]
            out.write(f"{time.time():.3f} {' '.join(cpu)}\n")
            out.flush()
            time.sleep(0.25)


def cpu(summary, samples):
    w = window(summary)
    if w is None:
        print("cores in the steady window: no steady window (too short a run)")
        return
    w0, w1 = w
    rows = [list(map(float, l.split())) for l in open(samples) if len(l.split()) == 9]
    inside = [r for r in rows if w0 <= r[0] <= w1]
    if len(inside) < 2:
        print(f"cores in the steady window: too few samples ({len(inside)})")
        return
    a, b = inside[0], inside[-1]
    d = [y - x for x, y in zip(a[1:], b[1:])]
    total = sum(d)
    cores = os.cpu_count()
    busy = total - d[3] - d[4]
    print(f"cores in the steady window ({b[0] - a[0]:.2f} s of samples): {cores * busy / total:.1f} of {cores} busy "
          f"(user {cores * (d[0] + d[1]) / total:.1f}, system {cores * (d[2] + d[5] + d[6]) / total:.1f}, "
          f"idle {cores * d[3] / total:.1f}, iowait {cores * d[4] / total:.1f})")


def stacks(folder, out, summaries):
    windows = [w for w in (window(s) for s in summaries) if w]
    took = []
    with open(out, "w") as o:
        for f in sorted(glob.glob(folder + "/w-*.txt"), key=os.path.getmtime):
            t = os.path.getmtime(f)
            # the second [t - 1, t] mostly inside one window
            if any(min(t, w1) - max(t - 1, w0) >= 0.5 for w0, w1 in windows):
                took.append(os.path.basename(f))
                with open(f) as part:
                    o.write(part.read())
    span = sum(w1 - w0 for w0, w1 in windows)
    print(f"steady window(s) {span:.2f} s: {len(took)} second(s) of stacks ({', '.join(took)})")


def warm(summaries):
    runs = [json.load(open(s)) for s in summaries]
    rate = lambda d: d["timeline"]["steady_volumes_per_second"] or 0
    secs = lambda d: d["timeline"]["steady_window_seconds"][1] - d["timeline"]["steady_window_seconds"][0] if rate(d) else 0
    later = [d for d in runs[1:] if rate(d)]
    if not later:
        print("warm runs: no steady window after the first run")
        return
    med = median(rate(d) for d in later)
    pooled = sum(rate(d) * secs(d) for d in later) / sum(secs(d) for d in later)
    work = sum(d["wall_seconds"] for d in later)
    print(f"warm: runs 2-{len(runs)} ({len(later)} with a steady window) steady {', '.join(f'{rate(d):.0f}' for d in later)} vol/s: median {med:.0f}, "
          f"pooled {pooled:.0f} vol/s over {sum(secs(d) for d in later):.1f} s of steady windows ({work:.1f} s of jobs); "
          f"cold run 1: {rate(runs[0]):.0f} vol/s steady, {runs[0]['wall_seconds']} s")


def ratios(jsonl):
    rates = {}
    for line in open(jsonl):
        d = json.loads(line)
        m = re.fullmatch(r"(.+)-r(\d+)(?:-w(\d+))?", d["run"])
        vps = d["timeline"].get("steady_volumes_per_second")
        if not m or not vps or m.group(3) == "1":
            continue
        rates.setdefault((m.group(2), m.group(1)), []).append(vps)
    for (rnd, name), rs in sorted(rates.items()):
        med = median(rs)
        base = rates.get((rnd, "f32-in-f32-out"))
        if base:
            bmed = median(base)
            print(f"round {rnd}: {name} {med:.0f} vol/s steady ({len(rs)} job(s)), {med / bmed:.2f}x float32's {bmed:.0f}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "sample":
        sample(sys.argv[2])
    elif cmd == "cpu":
        cpu(sys.argv[2], sys.argv[3])
    elif cmd == "stacks":
        stacks(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == "warm":
        warm(sys.argv[2:])
    elif cmd == "ratios":
        ratios(sys.argv[2])
    else:
        sys.exit(__doc__)
