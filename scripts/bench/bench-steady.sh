#!/usr/bin/env bash
# Steady state of the whole job (issue 15, item 5), in one call on the GPU machine after
# scripts/device/device-gpu-run.sh has the staged runtime. The data path moves about 8 GB/s, so a run of 30 s needs
# 240 GB of input and 160 GB of output: more than the 128 GiB machine holds. So each input folder lists the
# same 64 files REPEAT times (hard links: one copy of the bytes in /dev/shm, read REPEAT times from memory as
# separate files would be) and the pipeline is fused,avgpool3d, whose output is 2/3 of its input.
#   REPEAT=6 (default): 393,216 volumes, 77 GB in, 52 GB out per run. (VOLS, DEVICE, J and CP: a small try elsewhere.)
#   STAGING_AB="BYTES ..." (default none): after the other runs, the uncompressed set twice over with the default
#   input staging chunk (8 MiB) alternated with each of these (-Dvolpool.cuda.stagingChunkBytes); STANDARD=0 keeps
#   only the first standard run (uncompressed, so that no compared run writes the machine's first pages); -1, none.
#   DTYPES=1 (default 0): after the other runs, issue 32's comparison, DTYPE_ROUNDS rounds (default 2; DTYPE_RUNS
#   picks among the runs): the uncompressed float32 set, the same volumes' shape stored as int16 (bench-data.py
#   --dtype int16), each with float32 and with float16 output, and int16 widened on the device (the default), and
#   int16 to float16 once more widened by the readers on the host (-Dvolpool.cuda.widenOnDevice=false).
#   LIMITS=0 (default 1) leaves out the machine's limits and the anchor.
#   PROFILER=PATH (libasyncProfiler.so, default none): with DTYPES=1, int16 to float16 and float32 to float32 once
#   more each under async-profiler, per event of PROFILE_EVENTS (wall, cpu); the steady window's time by frame in the log.
#   Every run's log says how many of the machine's cores were busy in its steady window (/proc/stat).
#   DTYPE_WARM=N, PROFILE_WARM=N (default 1): each of those runs is N jobs in one JVM (io.volpool.bench.WarmRuns):
#   the first is start-up (a cold JVM's compiler threads hold 4-5 of the 16 cores through a short job's steady
#   window), the later ones the steady state of a long job; the log gives them apart, their median and their
#   windows pooled.
#   READ_REPEAT=N (default 0: none): one more run on the uncompressed files N times over (48: 3.1 million volumes,
#   618 GB in) through fused,avgpool3d,avgpool3d,avgpool3d, whose output is 1/96 of its input: the read side alone.
# Besides dd's reads, dd's writes into new /dev/shm files and its copies of the input files into new ones (the job
# writes 2/3 of what it reads, and a copy is the floor of a job that reads and writes), and WriteLimits: the job's
# page writes by 16 threads of one JVM, which outrun dd's writes from /dev/zero.
# Sets: uncompressed, and snappy of pages that hardly compress (bench-data.py --incompressible), both with
# pyarrow (row groups of 128, no dictionary). The machine's limits in the same call: dd of 16 files from 16
# processes, memcpy and read() by one thread; PinnedRead on the snappy set (64 files, warm). OLD=DIR alternates
# another commit's volpool jars on the snappy set. Logs: $OUT/steady.log, $OUT/steady.jsonl (one run
# summary per line, with the progress lines of each run in the log).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=${J:-/tmp/stage/jre/bin/java}
. "$(dirname "$0")/../lib/java-opens.sh"
. "$(dirname "$0")/../lib/wall-profile.sh"
CP=${CP:-"$(ls /tmp/stage/lib/*.jar | grep -v -e console-standalone -e -tests.jar | tr '\n' ':')"}
LOG="$OUT/steady.log"
SUM="$OUT/steady.jsonl"
REPEAT=${REPEAT:-6}
READ_REPEAT=${READ_REPEAT:-0}
OLD=${OLD:-}
STAGING_AB=${STAGING_AB:-}
STANDARD=${STANDARD:-1}
VOLS=${VOLS:-65536}
DEVICE=${DEVICE:-gpu}
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }

# report NAME SUMMARY_JSON: one run's line (and its summary in $SUM), the cores busy in its steady window
report() {
  local name=$1 summary=$2
  python3 - "$name" "$summary" >>"$SUM" <<'EOF'
import json, sys
d = json.load(open(sys.argv[2])); d.pop('settings', None); d['run'] = sys.argv[1]
print(json.dumps(d))
EOF
  python3 - "$name" "$summary" <<'EOF' | tee -a "$LOG"
import json, sys
d = json.load(open(sys.argv[2])); t = d['timeline']
print('   ', sys.argv[1], d['rows_in'], 'vol', d['wall_seconds'], 's,', d['gb_per_second_in'], 'GB/s in over the job;',
      'first commit', t['first_task_committed_seconds'], 's; steady', t['steady_window_seconds'],
      t['steady_gb_per_second_in'], 'GB/s in,', t['steady_volumes_per_second'], 'vol/s; tail', t['tail_seconds'], 's')
print('    phases (task-s):', {k: v for k, v in d['phase_seconds_summed_over_tasks'].items() if v})
EOF
  python3 scripts/bench/steady-window.py cpu "$summary" /tmp/cpu-steady.txt | sed 's/^/    /' | tee -a "$LOG"
}

# run NAME INPUT CLASSPATH [PIPELINE] [JAVA_OPTIONS] [JOB_FLAGS]: one JVM, one job (WARM=N: N jobs, WarmRuns)
run() {
  local name=$1 in=$2 cp=$3 pipeline=${4:-fused,avgpool3d} jopts=${5:-} extra=${6:-}
  local warm=${WARM:-1} main=io.volpool.job.VolpoolMain
  rm -rf /dev/shm/o-steady /tmp/cpu-steady.txt "/tmp/warm-$name"
  [ "$warm" -gt 1 ] && main="io.volpool.bench.WarmRuns $warm /tmp/warm-$name"
  log "volpool $name ($in, $pipeline$([ "$warm" -gt 1 ] && echo ", $warm runs in one JVM"))"
  python3 scripts/bench/steady-window.py sample /tmp/cpu-steady.txt &
  local sampler=$!
  "$J" -Xmx8g $JAVA_OPENS $jopts -Dlog4j2.configurationFile=conf/log4j2.properties -cp "$cp" $main \
    --master "local[16]" --conf spark.ui.enabled=false --conf spark.volpool.input="$in" \
    --conf spark.volpool.output=/dev/shm/o-steady --conf spark.volpool.pipeline="$pipeline" --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 \
    --conf spark.volpool.device="$DEVICE" --conf spark.volpool.fused.weights=conf/models/fused_seed.safetensors $extra \
    >>"$LOG" 2>&1
  local rc=$?
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  local summaries=()
  if [ "$warm" -gt 1 ]; then
    for i in $(seq 1 "$warm"); do
      if [ -f "/tmp/warm-$name/run-$i.json" ]; then
        report "$name-w$i" "/tmp/warm-$name/run-$i.json"
        summaries+=("/tmp/warm-$name/run-$i.json")
      fi
    done
    # the runs after the first: the warm JVM's steady state, medians and the windows pooled
    [ ${#summaries[@]} -gt 1 ] && python3 scripts/bench/steady-window.py warm "${summaries[@]}" | sed "s/^/    $name /" | tee -a "$LOG"
  elif [ -f /dev/shm/o-steady/_volpool_summary.json ]; then
    report "$name" /dev/shm/o-steady/_volpool_summary.json
    summaries=(/dev/shm/o-steady/_volpool_summary.json)
  fi
  if [ ${#summaries[@]} -eq 0 ] || [ "$rc" != 0 ]; then
    echo "    $name FAILED rc=$rc: $(grep -a 'volpool: FAILED' "$LOG" | tail -1)" | tee -a "$LOG"
  fi
  # a profiled run (PROFILER: loop files in /tmp/prof-NAME): the stacks of its steady windows (warm: the runs after
  # the first), for the report
  if [ -d "/tmp/prof-$name" ] && [ ${#summaries[@]} -gt 0 ]; then
    [ ${#summaries[@]} -gt 1 ] && summaries=("${summaries[@]:1}")
    python3 scripts/bench/steady-window.py stacks "/tmp/prof-$name" "/tmp/prof-$name.steady.txt" "${summaries[@]}" \
      | sed 's/^/    /' | tee -a "$LOG"
  fi
  rm -rf /dev/shm/o-steady
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g | head -2; df -h /dev/shm | tail -1; date -u; } >>"$LOG" 2>&1
log "datasets: $VOLS reference volumes in 64 files, uncompressed and incompressible snappy; $REPEAT hard links to each"
python3 scripts/bench/bench-data.py /dev/shm/base-none "$VOLS" 64 --compression none --no-dictionary --jobs 16 >>"$LOG" 2>&1
# the snappy set serves the standard runs after the first (STANDARD=1) and the anchor (LIMITS=1) only
sets=none
if [ "$STANDARD" = 1 ] || [ "${LIMITS:-1}" = 1 ]; then
  python3 scripts/bench/bench-data.py /dev/shm/base-inc "$VOLS" 64 --compression snappy --no-dictionary --jobs 16 --incompressible >>"$LOG" 2>&1
  sets="none inc"
fi
for set in $sets; do
  mkdir -p /dev/shm/long-$set
  for f in /dev/shm/base-$set/*.parquet; do
    for r in $(seq 1 "$REPEAT"); do ln "$f" "/dev/shm/long-$set/$(basename "$f" .parquet)-r$r.parquet"; done
  done
done
du -sh --apparent-size /dev/shm/base-* /dev/shm/long-* 2>&1 | tee -a "$LOG"
if [ "${LIMITS:-1}" = 1 ]; then
log "machine: dd of the 64 uncompressed files (12.9 GB) from 16 processes, three times, then one file"
for r in 1 2 3; do
  python3 - /dev/shm/base-none <<'EOF' 2>&1 | tee -a "$LOG"
import glob, os, subprocess, sys, time
files = sorted(glob.glob(sys.argv[1] + '/*.parquet'))
n = sum(os.path.getsize(f) for f in files)
t0 = time.perf_counter()
subprocess.run(['xargs', '-P16', '-I{}', 'dd', 'if={}', 'of=/dev/null', 'bs=8M', 'status=none'], input='\n'.join(files).encode(), check=True)
s = time.perf_counter() - t0
print(f"dd, 16 processes: {n} bytes in {s:.3f} s, {n / s / 1e9:.1f} GB/s")
EOF
done
dd if="$(ls /dev/shm/base-none/*.parquet | head -1)" of=/dev/null bs=8M 2>&1 | tail -1 | tee -a "$LOG"
# what the job must also do: write its output into fresh /dev/shm pages. The write limit (dd from /dev/zero into
# 16 new files) and the copy limit (dd of the 64 input files into 64 new files: the identity job's floor), twice each
log "machine: dd writes 12.9 GB into 16 new /dev/shm files from 16 processes, and copies the 64 files into new ones"
for r in 1 2; do
  python3 - /dev/shm/base-none <<'EOF' 2>&1 | tee -a "$LOG"
import glob, os, subprocess, sys, time
files = sorted(glob.glob(sys.argv[1] + '/*.parquet'))
n = sum(os.path.getsize(f) for f in files)
os.makedirs('/dev/shm/dd-out', exist_ok=True)
each = n // 16 // (8 << 20)
t0 = time.perf_counter()
subprocess.run(['xargs', '-P16', '-I{}', 'dd', 'if=/dev/zero', 'of=/dev/shm/dd-out/w{}', 'bs=8M', f'count={each}', 'status=none'],
               input='\n'.join(str(i) for i in range(16)).encode(), check=True)
s = time.perf_counter() - t0
w = 16 * each * (8 << 20)
print(f"dd write, 16 processes into new files: {w} bytes in {s:.3f} s, {w / s / 1e9:.1f} GB/s")
subprocess.run(['rm', '-rf', '/dev/shm/dd-out'], check=True)
os.makedirs('/dev/shm/dd-out')
t0 = time.perf_counter()
subprocess.run(['xargs', '-P16', '-I{}', 'sh', '-c', 'dd if={} of=/dev/shm/dd-out/$(basename {}) bs=8M status=none'],
               input='\n'.join(files).encode(), check=True)
s = time.perf_counter() - t0
print(f"dd copy, 16 processes, the 64 files into new files: {n} bytes in {s:.3f} s, {n / s / 1e9:.1f} GB/s read and written")
subprocess.run(['rm', '-rf', '/dev/shm/dd-out'], check=True)
EOF
done
python3 scripts/bench/machine-limits.py "$(ls /dev/shm/base-none/*.parquet | head -1)" 2>&1 | tee -a "$LOG"
# the job's own way of writing, alone: 16 threads of one JVM write 30-byte headers and 131,076-byte pages into new
# files, from a reused page and from a 64 MiB buffer (a batch's output, not in cache), without and with CRC-32
log "machine: one JVM's 16 threads write 13.4 GB of pages into new /dev/shm files (io.volpool.bench.WriteLimits)"
"$J" -XX:MaxDirectMemorySize=4g -cp "$CP" io.volpool.bench.WriteLimits /dev/shm/write-limits 16 800 2 2>&1 | tee -a "$LOG"
rm -rf /dev/shm/write-limits
log "anchor: PinnedRead on the snappy set (the 64 files), 16 threads"
"$J" -Xmx48g -cp "$CP" PinnedRead /dev/shm/base-inc 16 gpu 2>&1 | tail -3 | tee -a "$LOG"

fi
CPOLD=""
[ -n "$OLD" ] && CPOLD="$(echo "$CP" | tr ':' '\n' | grep -v '/volpool-' | tr '\n' ':')$(ls "$OLD"/volpool-*.jar | tr '\n' ':')"
# STANDARD=-1: not even the first standard run (each DTYPE_WARM JVM's first run writes the machine's first pages)
[ "$STANDARD" != -1 ] && run uncompressed-long /dev/shm/long-none "$CP"
if [ "$STANDARD" = 1 ]; then
  run snappy-inc-long /dev/shm/long-inc "$CP"
  [ -n "$OLD" ] && run snappy-inc-long-old /dev/shm/long-inc "$CPOLD"
  run uncompressed-long-2 /dev/shm/long-none "$CP"
  run snappy-inc-long-2 /dev/shm/long-inc "$CP"
fi
# the input's pinned staging chunk: 8 MiB (the default) against smaller ones, which the GPU's copy may find in cache
if [ -n "$STAGING_AB" ]; then
  for round in 1 2; do
    run "uncompressed-staging-default-r$round" /dev/shm/long-none "$CP"
    for bytes in $STAGING_AB; do
      run "uncompressed-staging-$bytes-r$round" /dev/shm/long-none "$CP" fused,avgpool3d "-Dvolpool.cuda.stagingChunkBytes=$bytes"
    done
  done
fi
# stored dtypes and output dtypes (issue 32): int16 in and float16 out against float32 both ways, same shape and count
if [ "${DTYPES:-0}" = 1 ]; then
  python3 scripts/bench/bench-data.py /dev/shm/base-i16 "$VOLS" 64 --compression none --no-dictionary --jobs 16 --dtype int16 >>"$LOG" 2>&1
  mkdir -p /dev/shm/long-i16
  for f in /dev/shm/base-i16/*.parquet; do
    for r in $(seq 1 "$REPEAT"); do ln "$f" "/dev/shm/long-i16/$(basename "$f" .parquet)-r$r.parquet"; done
  done
  du -sh --apparent-size /dev/shm/base-i16 2>&1 | tee -a "$LOG"
  # DTYPE_RUNS picks among these (default all), DTYPE_ROUNDS how many times over (default 2)
  runs=${DTYPE_RUNS:-"f32-in-f32-out i16-in-f32-out i16-in-f16-out i16-in-f16-out-hostwiden f32-in-f16-out"}
  dtype_run() {
    case "$1" in
      f32-in-f32-out) run "$2" /dev/shm/long-none "$CP" fused,avgpool3d "${3:-}" ;;
      i16-in-f32-out) run "$2" /dev/shm/long-i16 "$CP" fused,avgpool3d "-Dvolpool.cuda.widenOnDevice=true ${3:-}" ;;
      i16-in-f16-out) run "$2" /dev/shm/long-i16 "$CP" fused,avgpool3d "-Dvolpool.cuda.widenOnDevice=true ${3:-}" \
        "--conf spark.volpool.output.dtype=float16" ;;
      # the same with the readers widening on the host (as before the device widened)
      i16-in-f16-out-hostwiden) run "$2" /dev/shm/long-i16 "$CP" fused,avgpool3d "-Dvolpool.cuda.widenOnDevice=false ${3:-}" \
        "--conf spark.volpool.output.dtype=float16" ;;
      f32-in-f16-out) run "$2" /dev/shm/long-none "$CP" fused,avgpool3d "${3:-}" "--conf spark.volpool.output.dtype=float16" ;;
      *) echo "    DTYPE_RUNS: no run named $1" | tee -a "$LOG" ;;
    esac
  }
  # DTYPE_WARM=N (default 1): each run N jobs in one JVM (WarmRuns): the first is start-up, the rest steady state
  for round in $(seq 1 "${DTYPE_ROUNDS:-2}"); do
    for r in $runs; do WARM=${DTYPE_WARM:-1} dtype_run "$r" "$r-r$round"; done
  done
  log "each run against the float32 run of its round (steady vol/s; warm JVMs: the median of the jobs after the first)"
  python3 scripts/bench/steady-window.py ratios "$SUM" | sed 's/^/    /' | tee -a "$LOG"
  # PROFILER=.../libasyncProfiler.so: int16 to float16 and float32 to float32 once more each under async-profiler,
  # for each of PROFILE_EVENTS (default "wall": every thread's wall clock; "cpu": on-core time, every thread), at
  # 5 ms, a file of collapsed stacks a second: the steady window's seconds summed (scripts/bench/wall-profile.py)
  # in the log, all of them gzipped in $OUT/wall-NAME.txt.gz
  if [ -n "${PROFILER:-}" ]; then
    for ev in ${PROFILE_EVENTS:-wall}; do
      for p in i16-in-f16-out f32-in-f32-out; do
        rm -rf "/tmp/prof-$p-$ev" "/tmp/prof-$p-$ev.steady.txt" && mkdir -p "/tmp/prof-$p-$ev"
        WARM=${PROFILE_WARM:-1} dtype_run "$p" "$p-$ev" "$(loop_profile_opt "$ev" "/tmp/prof-$p-$ev")"
        if [ -s "/tmp/prof-$p-$ev.steady.txt" ]; then
          echo "    [$p-$ev] the steady window:" | tee -a "$LOG"
          python3 scripts/bench/wall-profile.py "/tmp/prof-$p-$ev.steady.txt" 5 60 threads 2>&1 | sed "s/^/    [$p-$ev] /" >>"$LOG"
        fi
        cat "/tmp/prof-$p-$ev"/w-*.txt | gzip -c >"$OUT/wall-$p-$ev.txt.gz"
      done
    done
  fi
fi
# the read side alone, for 30 s and more: the uncompressed files READ_REPEAT times (hard links), through two more
# pools, whose output is 1/96 of the input (2 KiB a volume), so the job writes almost nothing
if [ "$READ_REPEAT" -gt 0 ]; then
  mkdir -p /dev/shm/long-read
  for f in /dev/shm/base-none/*.parquet; do
    for r in $(seq 1 "$READ_REPEAT"); do ln "$f" "/dev/shm/long-read/$(basename "$f" .parquet)-r$r.parquet"; done
  done
  run uncompressed-read-bound /dev/shm/long-read "$CP" fused,avgpool3d,avgpool3d,avgpool3d
fi
rm -rf /dev/shm/long-* /dev/shm/base-*
log "done"
