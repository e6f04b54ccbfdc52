#!/usr/bin/env bash
# Issue 33's CPU benchmark: one volume stored across rows, then the same volume as one C-order .npy, through
# avgpool3d on the CPU backend (written across rows, then the .npy written as .npy in place), as ranges of its output planes in several tasks (the default
# task size, spark.sql.files.maxPartitionBytes=128m) against one task for the whole volume
# (spark.volpool.input.spreadVolumes=false, as before ranges), alternated ROUNDS times in one run.
# The volume ([C, D, 256, 256] float32, C x D x 256 KiB) is written by numpy as one .npy and cut into rows of
# 16 MiB by the job itself (identity, output.layout=rows). Needs numpy and a built job
# (mvn -q -B -DskipTests package). Env: C (default 6), D (1024), ROUNDS (2), DIR (/tmp/volpool-ranges),
# MASTER (local[*]), OUT (logs: $OUT/ranges-cpu.log and the run summaries).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
C=${C:-6}
D=${D:-1024}
ROUNDS=${ROUNDS:-2}
DIR=${DIR:-/tmp/volpool-ranges}
MASTER=${MASTER:-local[*]}
OUT=${OUT:-$DIR/logs}
mkdir -p "$OUT"
LOG="$OUT/ranges-cpu.log"
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
rm -rf "$DIR/npy" "$DIR/rows" "$DIR"/out-*
mkdir -p "$DIR/npy"
log "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; volume [$C, $D, 256, 256] float32"
python3 -c "
import numpy as np
v = np.random.default_rng(7).random(($C, $D, 256, 256), dtype=np.float32)
np.save('$DIR/npy/big.npy', v)
"
common=(--master "$MASTER" --conf spark.ui.enabled=false --conf spark.volpool.device=cpu)
VOLPOOL_JAVA_OPTS=${VOLPOOL_JAVA_OPTS:--Xmx6g} "$root/scripts/volpool" "${common[@]}" \
  --conf spark.volpool.input="$DIR/npy" --conf spark.volpool.input.format=npy --conf spark.volpool.output="$DIR/rows" \
  --conf spark.volpool.pipeline=identity --conf spark.volpool.output.format=parquet --conf spark.volpool.output.layout=rows \
  --conf spark.volpool.output.rowBytes=16m \
  >>"$LOG" 2>&1
log "rows: $(du -sh "$DIR/rows" | cut -f1) in $(find "$DIR/rows" -name '*.parquet' | wc -l) file(s)"
run() {  # run NAME SPREAD [SPARK_ARGS...]: avgpool3d over the rows (or what the arguments name instead)
  local name=$1 spread=$2
  shift 2
  log "run $name (spark.volpool.input.spreadVolumes=$spread)"
  VOLPOOL_JAVA_OPTS=${VOLPOOL_JAVA_OPTS:--Xmx6g} "$root/scripts/volpool" "${common[@]}" \
    --conf spark.volpool.input="$DIR/rows" --conf spark.volpool.output="$DIR/out-$name" "$@" \
    --conf spark.volpool.pipeline=avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 \
    --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 \
    --conf spark.volpool.input.spreadVolumes="$spread" >"$OUT/$name.log" 2>&1
  grep -E "ranges of output planes|volumes  |rows  |bytes  |wall time|throughput|timeline|memory " "$OUT/$name.log" | tee -a "$LOG"
  cp "$DIR/out-$name/_volpool_summary.json" "$OUT/$name.summary.json"
  rm -rf "$DIR/out-$name"
}
for r in $(seq 1 "$ROUNDS"); do
  run "one-task-r$r" false
  run "ranges-r$r" true
done
# the same volume as one .npy, read by position (output across rows, as the ranges need)
npy=(--conf spark.volpool.input="$DIR/npy" --conf spark.volpool.input.format=npy --conf spark.volpool.output.format=parquet
  --conf spark.volpool.output.layout=rows)
for r in $(seq 1 "$ROUNDS"); do
  run "npy-one-task-r$r" false "${npy[@]}"
  run "npy-ranges-r$r" true "${npy[@]}"
done
# the same .npy written as .npy: ranges write their planes in place into the one output file
npyout=(--conf spark.volpool.input="$DIR/npy" --conf spark.volpool.input.format=npy --conf spark.volpool.output.format=npy)
for r in $(seq 1 "$ROUNDS"); do
  run "npy-to-npy-one-task-r$r" false "${npyout[@]}"
  run "npy-to-npy-ranges-r$r" true "${npyout[@]}"
done
log "done"
