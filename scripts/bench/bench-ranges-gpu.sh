#!/usr/bin/env bash
# Issue 33's GPU benchmark, in one call on the GPU machine after scripts/device/device-gpu-run.sh's staging: one volume
# of GIB GiB stored across rows (float32 [C, D, 512, 512], rows of 16 MiB) through avgpool3d on the GPU, as ranges of
# output planes over the tasks (the default) and as one task (spark.volpool.input.spreadVolumes=false, as before
# ranges), then the same volume as one C-order .npy read by position (ranges, and one task), beside the many-volume
# rate of the same bytes as 64 .npy volumes of GIB/64 GiB each, and the machine's dd. Two lengths of job, each
# against its like: once (the issue's figure: GIB GiB, about a second of work at the many-volume rate, so start-up
# and the first wave weigh), and four times (each file listed four times by hard links: no byte more in memory), a
# steady state of seconds: the .npy volume as four volumes of ranges (4 x 64 range tasks) against the 64 files as
# 256 volumes. The rows cannot be listed twice (their id names one volume) and four copies do not fit in memory.
# Every run samples its running tasks every 250 ms (spark.executor.heartbeatInterval): the steady window of a job
# of seconds has samples, not only task ends.
# Steady GB/s from each run's summary (its timeline); peak host memory (the budget's) from the summary, peak device
# memory from nvidia-smi sampled every 0.2 s.
# The volume is made by numpy as one .npy on the local disk (a repeated random block: GB/s, not hours), run as ranges,
# then cut into rows by the job itself (identity, output.layout=rows) into /dev/shm, and the .npy removed before the
# rows' runs.
# Env: GIB (32), DEVICE (gpu), J and CP (the staged runtime), OUT (logs: $OUT/ranges-gpu.log, each run's log,
# device memory and summary in $OUT/ranges-runs.tgz), NPYDIR (/tmp/ranges-npy, on disk), SHM (/dev/shm/ranges).
# QUICK=1 leaves out the runs of the old slab sizes and of one task. ROUNDS (2): runs of each kind, back to back. READ_THREADS="N ...": rows ranges once more
# with each number of read threads per slab run (-Dvolpool.cuda.slabReadThreads). PROFILER=.../libasyncProfiler.so:
# ranges-r2, npy4-ranges-r2 and many4-r2 under async-profiler's wall clock, the task threads' summary in the log
# (scripts/bench/wall-profile.py), the collapsed stacks gzipped as $OUT/wall-NAME.txt.gz.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=${J:-/tmp/stage/jre/bin/java}
. "$(dirname "$0")/../lib/java-opens.sh"
. "$(dirname "$0")/../lib/wall-profile.sh"
CP=${CP:-"$(ls /tmp/stage/lib/*.jar | grep -v -e console-standalone -e -tests.jar | tr '\n' ':')"}
GIB=${GIB:-32}
DEVICE=${DEVICE:-gpu}
NPYDIR=${NPYDIR:-/tmp/ranges-npy}
SHM=${SHM:-/dev/shm/ranges}
LOG="$OUT/ranges-gpu.log"
QUICK=${QUICK:-0}
ROUNDS=${ROUNDS:-2}
RUNS="$OUT/runs"; mkdir -p "$RUNS"
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
rm -rf "$NPYDIR" "$SHM"; mkdir -p "$NPYDIR/one" "$SHM"
C=4
D=$(( GIB * 1024 / 4 ))   # [4, D, 512, 512] float32 = D MiB per channel
log "volume [$C, $D, 512, 512] float32 ($GIB GiB); $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"
python3 - "$NPYDIR/one/big.npy" "$C" "$D" <<'PY'
import sys, numpy as np
path, c, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
block = np.random.default_rng(7).random((16, 512, 512), dtype=np.float32)
m = np.lib.format.open_memmap(path, mode="w+", dtype="<f4", shape=(c, d, 512, 512))
for ci in range(c):
    for z in range(0, d, 16):
        n = min(16, d - z)
        m[ci, z:z + n] = block[:n] + np.float32(ci * 0.5 + z * 1e-3)
m.flush()
PY
log "npy written: $(du -sh "$NPYDIR" | cut -f1)"
job() {  # job NAME SPARK_ARGS...: runs the job (JVM options in $JOB_JAVA), its log in $OUT/NAME.log, its summary line in the log
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$RUNS/$name.gpumem" 2>/dev/null &
  local smi=$!
  local prof=""
  case "$name" in ranges-r2|npy4-ranges-r2|many4-r2) [ -n "${PROFILER:-}" ] && prof=$(wall_profile_opt "/tmp/wall-$name.txt") ;; esac
  "$J" -Xmx64g $JAVA_OPENS ${JOB_JAVA:-} $prof -Dlog4j2.configurationFile=conf/log4j2.properties -cp "$CP" io.volpool.job.VolpoolMain \
    --master "local[16]" --conf spark.ui.enabled=false --conf spark.volpool.device="$DEVICE" \
    --conf spark.volpool.output.mode=overwrite --conf spark.executor.heartbeatInterval=250ms "$@" > "$RUNS/$name.log" 2>&1
  local rc=$?
  kill $smi 2>/dev/null
  if [ -n "$prof" ]; then
    wall_profile_report "/tmp/wall-$name.txt" "$name" | sed "s/^/    [$name] /" >>"$LOG"
  fi
  python3 - "$name" "$rc" "$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" "$RUNS" "$SHM" <<'PY' | tee -a "$LOG"
import json, sys, glob
name, rc, secs, out, shm = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
try:
    peak = max(int(x) for x in open(f"{out}/{name}.gpumem").read().split() if x.strip().isdigit())
except (ValueError, OSError):
    peak = -1
line = f"    {name}: rc {rc}, process {secs} s, peak device memory {peak} MiB"
for s in glob.glob(f"{shm}/out-{name}/_volpool_summary.json") + glob.glob(f"{shm}/{name}/_volpool_summary.json"):
    d = json.load(open(s)); t = d["timeline"]
    json.dump(d, open(f"{out}/{name}.summary.json", "w"))
    line += (f"; job {d['wall_seconds']} s, {d['gb_per_second_in']} GB/s in over the job, steady {t['steady_gb_per_second_in']}"
             f" GB/s in {t['steady_window_seconds']}, peak budget {d['peak_budget_bytes'] / 2**30:.1f} GiB of "
             f"{d['memory_budget_bytes'] / 2**30:.1f}, {d.get('volumes_in')} volumes, {d.get('rows_in')} rows in")
    ph = d.get("phase_seconds_summed_over_tasks", {})
    line += "; task-s " + ", ".join(f"{k} {v:.1f}" for k, v in ph.items() if v >= 0.5)
print(line)
PY
}
pool=(--conf spark.volpool.pipeline=avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2
  --conf spark.volpool.avgpool3d.padding=1)
npy=(--conf spark.volpool.input="$NPYDIR/one" --conf spark.volpool.input.format=npy --conf spark.volpool.output.format=parquet
  --conf spark.volpool.output.layout=rows)
for r in $(seq 1 "$ROUNDS"); do
  job "npy-ranges-r$r" "${npy[@]}" --conf spark.volpool.output="$SHM/out-npy-ranges-r$r" "${pool[@]}"
  rm -rf "$SHM/out-npy-ranges-r$r"
done
# the same file listed four times: four volumes of GIB GiB, each as ranges, for a steady state of seconds
mkdir -p "$NPYDIR/four"
ln "$NPYDIR/one/big.npy" "$NPYDIR/four/big.npy"
for k in 1 2 3; do mkdir -p "$NPYDIR/four/again$k" && ln "$NPYDIR/one/big.npy" "$NPYDIR/four/again$k/big.npy"; done
for r in $(seq 1 "$ROUNDS"); do
  job "npy4-ranges-r$r" "${npy[@]}" --conf spark.volpool.input="$NPYDIR/four" \
    --conf spark.volpool.output="$SHM/out-npy4-ranges-r$r" "${pool[@]}"
  rm -rf "$SHM/out-npy4-ranges-r$r"
done
# ranges whose slabs fill the budget's share (one slab a range task, as before the slabs' aim of 256 MiB)
if [ "$QUICK" != 1 ]; then
  JOB_JAVA=-Dvolpool.cuda.slabRunBytes=2147483647 job "npy-ranges-bigslabs" "${npy[@]}" \
    --conf spark.volpool.output="$SHM/out-npy-ranges-bigslabs" "${pool[@]}"
  rm -rf "$SHM/out-npy-ranges-bigslabs"
  job "npy-one-task" "${npy[@]}" --conf spark.volpool.output="$SHM/out-npy-one-task" "${pool[@]}" \
    --conf spark.volpool.input.spreadVolumes=false
  rm -rf "$SHM/out-npy-one-task"
fi
job rows --conf spark.volpool.input="$NPYDIR/one" --conf spark.volpool.input.format=npy --conf spark.volpool.output="$SHM/rows" \
  --conf spark.volpool.pipeline=identity --conf spark.volpool.output.format=parquet --conf spark.volpool.output.layout=rows \
  --conf spark.volpool.output.rowBytes=16m --conf spark.volpool.output.compression=none
rm -rf "$NPYDIR"
log "rows: $(du -sh "$SHM/rows" | cut -f1) in $(find "$SHM/rows" -name '*.parquet' | wc -l) file(s)"
for r in $(seq 1 "$ROUNDS"); do
  job "ranges-r$r" --conf spark.volpool.input="$SHM/rows" --conf spark.volpool.output="$SHM/out-ranges-r$r" "${pool[@]}"
  rm -rf "$SHM/out-ranges-r$r"
done
for n in ${READ_THREADS:-}; do
  JOB_JAVA=-Dvolpool.cuda.slabReadThreads=$n job "ranges-read$n" --conf spark.volpool.input="$SHM/rows" \
    --conf spark.volpool.output="$SHM/out-ranges-read$n" "${pool[@]}"
  rm -rf "$SHM/out-ranges-read$n"
done
if [ "$QUICK" != 1 ]; then
  JOB_JAVA=-Dvolpool.cuda.slabRunBytes=2147483647 job "ranges-bigslabs" --conf spark.volpool.input="$SHM/rows" \
    --conf spark.volpool.output="$SHM/out-ranges-bigslabs" "${pool[@]}"
  rm -rf "$SHM/out-ranges-bigslabs"
  job "one-task" --conf spark.volpool.input="$SHM/rows" --conf spark.volpool.output="$SHM/out-one-task" "${pool[@]}" \
    --conf spark.volpool.input.spreadVolumes=false
  rm -rf "$SHM/out-one-task"
fi
rm -rf "$SHM/rows"
# the many-volume rate of the same bytes: 64 volumes [4, D/64, 512, 512] as .npy files in many/one; many/four lists
# each of them 4 times (hard links: no byte more in memory), the npy4 runs' like
python3 - "$SHM/many/one" "$C" "$(( D / 64 ))" <<'PY'
import sys, os, numpy as np
root, c, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(root, exist_ok=True)
block = np.random.default_rng(7).random((c, d, 512, 512), dtype=np.float32)
for i in range(64):
    np.save(f"{root}/v{i:02d}.npy", block + np.float32(i))
PY
mkdir -p "$SHM/many/four"
ln "$SHM/many/one"/v*.npy "$SHM/many/four/"
for k in 1 2 3; do
  mkdir -p "$SHM/many/four/again$k"
  ln "$SHM/many/one"/v*.npy "$SHM/many/four/again$k/"
done
log "many volumes: $(du -sh "$SHM/many" | cut -f1) in $(ls "$SHM/many/one" | grep -c npy) .npy files; listed 4 times (hard links): $(find "$SHM/many/four" -name '*.npy' | wc -l) volumes"
for n in 1 4; do
  for r in $(seq 1 "$ROUNDS"); do
    job "many$n-r$r" --conf spark.volpool.input="$SHM/many/$([ $n = 1 ] && echo one || echo four)" \
      --conf spark.volpool.input.format=npy --conf spark.volpool.output="$SHM/out-many$n-r$r" "${pool[@]}"
    rm -rf "$SHM/out-many$n-r$r"
  done
done
log "machine: dd of the 64 .npy files from 16 processes: $(cd "$SHM/many/one" && python3 - <<'PY'
import subprocess, time, glob
files = sorted(glob.glob("*.npy")); t0 = time.time()
ps = [subprocess.Popen(["sh", "-c", " ".join(f"dd if={f} of=/dev/null bs=8M status=none;" for f in files[i::16])]) for i in range(16)]
[p.wait() for p in ps]
import os; n = sum(os.path.getsize(f) for f in files); print(f"{n / (time.time() - t0) / 1e9:.1f} GB/s")
PY
)"
rm -rf "$SHM"
tar -czf "$OUT/ranges-runs.tgz" -C "$OUT" runs && rm -rf "$RUNS"
log "done"
