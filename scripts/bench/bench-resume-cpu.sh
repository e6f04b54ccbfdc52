#!/usr/bin/env bash
# Issue 34's benchmark: the rework after a kill. A job of about 30 s (fused then avgpool3d on the CPU backend over
# VOLS reference volumes in 16 files, 16 tasks) runs clean once; then it runs with spark.volpool.output.mode=resume
# and its JVM is killed (SIGKILL) once half its tasks have committed; the resumed run keeps those and runs the rest.
# Reported: the clean run's wall time, the tasks committed at the kill, the resumed run's tasks kept and run, the
# volumes it read, and the rework: the resumed run's time over the clean run's share of the tasks it ran (the
# target: at most the work of the tasks in flight at the kill). Needs a built job (mvn -q -B -DskipTests package).
# Env: VOLS (3072), DIR (/tmp/volpool-resume), MASTER (local[*]), OUT (logs: $OUT/resume-cpu.log, summaries).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
VOLS=${VOLS:-3072}
DIR=${DIR:-/tmp/volpool-resume}
MASTER=${MASTER:-local[*]}
OUT=${OUT:-$DIR/logs}
mkdir -p "$OUT"
LOG="$OUT/resume-cpu.log"
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
rm -rf "$DIR/in" "$DIR"/out-*
export VOLPOOL_JAVA_OPTS=${VOLPOOL_JAVA_OPTS:--Xmx6g}
log "machine: $(nproc) cores; $VOLS reference volumes in 16 files"
java -cp "$(ls "$root"/job/target/lib/*.jar | tr '\n' ':')$root/job/target/classes:$root/udf/target/classes" \
  io.volpool.job.SampleData "$DIR/in" "$VOLS" 16 >>"$LOG" 2>&1
common=(--master "$MASTER" --conf spark.ui.enabled=false --conf spark.volpool.device=cpu
  --conf spark.volpool.input="$DIR/in" --conf spark.volpool.pipeline=fused,avgpool3d
  --conf spark.volpool.fused.weights="$root/conf/models/fused_seed.safetensors" --conf spark.volpool.avgpool3d.kernelSize=3
  --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1
  --conf spark.sql.files.maxPartitionBytes=$(( VOLS * 196608 / 16 + 65536 )))
committed() {  # tasks committed into the staging of output $1
  find "$(dirname "$1")" -maxdepth 4 -path "*volpool-staging-*/_temporary/0/task_*" -type d 2>/dev/null | wc -l
}
t0=$(date +%s.%N)
"$root/scripts/volpool" "${common[@]}" --conf spark.volpool.output="$DIR/out-clean/pooled" >"$OUT/clean.log" 2>&1
clean=$(python3 -c "print(round($(date +%s.%N) - $t0, 2))")
cp "$DIR/out-clean/pooled/_volpool_summary.json" "$OUT/clean.summary.json"
tasks=$(python3 -c "import json; print(json.load(open('$OUT/clean.summary.json'))['files_out'])")
log "clean run: $clean s (process), $tasks tasks; $(grep -E 'wall time' "$OUT/clean.log" | head -1)"
"$root/scripts/volpool" "${common[@]}" --conf spark.volpool.output="$DIR/out-res/pooled" \
  --conf spark.volpool.output.mode=resume >"$OUT/killed.log" 2>&1 &
pid=$!
tk=$(date +%s.%N)
while [ "$(committed "$DIR/out-res/pooled")" -lt $((tasks / 2)) ]; do
  kill -0 $pid 2>/dev/null || { log "the run ended before half its tasks committed"; exit 1; }
  sleep 0.05
done
at=$(committed "$DIR/out-res/pooled")
pkill -9 -P $pid || true; kill -9 $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
log "killed after $(python3 -c "print(round($(date +%s.%N) - $tk, 2))") s with $at of $tasks tasks committed"
t1=$(date +%s.%N)
"$root/scripts/volpool" "${common[@]}" --conf spark.volpool.output="$DIR/out-res/pooled" \
  --conf spark.volpool.output.mode=resume >"$OUT/resumed.log" 2>&1
resumed=$(python3 -c "print(round($(date +%s.%N) - $t1, 2))")
cp "$DIR/out-res/pooled/_volpool_summary.json" "$OUT/resumed.summary.json"
python3 - "$OUT" "$clean" "$resumed" "$at" "$tasks" <<'PY' | tee -a "$LOG"
import json, sys
out, clean, resumed, at, tasks = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
c = json.load(open(out + '/clean.summary.json')); r = json.load(open(out + '/resumed.summary.json'))
res = r['resumed']
print(f"resumed run: {resumed} s (process), {r['wall_seconds']} s job; kept {res['tasks_kept']} tasks "
      f"({res['volumes_kept']} volumes), ran {res['tasks_run']}, read {r['volumes_in']} volumes")
print(f"clean run: {clean} s (process), {c['wall_seconds']} s job, {c['volumes_in']} volumes")
uncommitted = tasks - at
print(f"tasks not committed at the kill: {uncommitted}; rerun by the resume: {res['tasks_run']} "
      f"(target: at most those in flight and not yet started: {uncommitted})")
print(f"rework: the resumed job's time over the clean job's share of its tasks: "
      f"{r['wall_seconds'] / (c['wall_seconds'] * res['tasks_run'] / tasks):.2f}x")
PY
log "done"
