#!/usr/bin/env bash
# Two builds of volpool side by side on one volume stored across rows (issue 33's rows, CPU backend): avgpool3d k3 s2
# p1 as ranges over the tasks and as one task (spark.volpool.input.spreadVolumes=false), the builds alternated ROUNDS
# times, each run's wall time, task-seconds reading and writing, and peak budget from its summary.
# Usage: bench-rows-ab-cpu.sh OLD_TREE NEW_TREE (checkouts built with mvn -q -B -DskipTests install).
# The volume ([C, D, 256, 256] float32 in rows of 16 MiB) is made as in bench-ranges-cpu.sh. Env: C (6), D (1024),
# ROUNDS (3), DIR (/tmp/volpool-rows-ab), OUT (logs: $OUT/rows-old-new.log).
set -euo pipefail
old=$1 new=$2
C=${C:-6}; D=${D:-1024}; ROUNDS=${ROUNDS:-3}; DIR=${DIR:-/tmp/volpool-rows-ab}; OUT=${OUT:-$DIR/logs}
mkdir -p "$OUT" "$DIR/npy"
LOG="$OUT/rows-old-new.log"
echo "== $(date -u +%T) $(nproc) cores; [$C, $D, 256, 256] float32 in rows of 16 MiB; old $(git -C "$old" log --oneline -1), new $(git -C "$new" log --oneline -1)" | tee -a "$LOG"
common=(--master 'local[*]' --conf spark.ui.enabled=false --conf spark.volpool.device=cpu)
if [ ! -d "$DIR/rows" ]; then
  python3 -c "
import numpy as np
np.save('$DIR/npy/big.npy', np.random.default_rng(7).random(($C, $D, 256, 256), dtype=np.float32))"
  VOLPOOL_JAVA_OPTS=-Xmx6g "$new/scripts/volpool" "${common[@]}" --conf spark.volpool.input="$DIR/npy" \
    --conf spark.volpool.input.format=npy --conf spark.volpool.output="$DIR/rows" --conf spark.volpool.pipeline=identity \
    --conf spark.volpool.output.format=parquet --conf spark.volpool.output.layout=rows \
    --conf spark.volpool.output.rowBytes=16m >"$OUT/make-rows.log" 2>&1
  rm -rf "$DIR/npy"
fi
run() {  # run TREE NAME [SPARK_ARGS...]
  local tree=$1 name=$2; shift 2
  VOLPOOL_JAVA_OPTS=-Xmx6g "$tree/scripts/volpool" "${common[@]}" --conf spark.volpool.input="$DIR/rows" \
    --conf spark.volpool.output="$DIR/out-$name" --conf spark.volpool.pipeline=avgpool3d \
    --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 \
    --conf spark.volpool.avgpool3d.padding=1 "$@" >"$OUT/$name.log" 2>&1
  python3 - "$DIR/out-$name/_volpool_summary.json" "$name" <<'PY' | tee -a "$LOG"
import json, sys
d = json.load(open(sys.argv[1])); p = d["phase_seconds_summed_over_tasks"]
print(f"{sys.argv[2]}: {d['wall_seconds']} s, read {p['read']:.2f} task-s, kernels {p['kernels']:.2f}, write {p['write']:.2f},"
      f" peak budget {d['peak_budget_bytes'] >> 20} MiB, {d['rows_in']} rows, {d['bytes_in']} bytes in")
PY
  rm -rf "$DIR/out-$name"
}
for r in $(seq 1 "$ROUNDS"); do
  for side in old new; do
    tree=$old; [ "$side" = new ] && tree=$new
    run "$tree" "$side-ranges-r$r"
    run "$tree" "$side-one-task-r$r" --conf spark.volpool.input.spreadVolumes=false
  done
done
