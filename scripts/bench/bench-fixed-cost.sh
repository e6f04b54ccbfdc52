#!/usr/bin/env bash
# The fixed cost of a small job (issue 15) on this machine: the 1,024-volume identity job (reference
# volumes in 16 Parquet files on /dev/shm) as a whole process through scripts/volpool, ROUNDS rounds
# alternating a JVM without the class archive and one with it (scripts/class-archive makes it first if
# stale). Logs process seconds, the job's wall and its timeline per run to LOG_DIR/fixed-cost.log.
#   scripts/bench/bench-fixed-cost.sh LOG_DIR [ROUNDS=5] [MASTER=local[2]]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:?usage: bench-fixed-cost.sh LOG_DIR [ROUNDS] [MASTER]}; rounds=${2:-5}; master=${3:-local[2]}
mkdir -p "$dir"; log="$dir/fixed-cost.log"
in=/dev/shm/fixed-cost-vols; out=/dev/shm/fixed-cost-out
{ date -u; nproc; java -version 2>&1 | head -1; git rev-parse --short HEAD; } | tee "$log"
scripts/class-archive --if-stale
[ -d "$in" ] || VOLPOOL_MAIN=io.volpool.job.SampleData scripts/volpool "$in" 1024 16 >/dev/null 2>&1
for i in $(seq "$rounds"); do
  for archive in off on; do
    t0=$(date +%s.%N)
    env $([ $archive = off ] && echo VOLPOOL_CLASS_ARCHIVE=off) VOLPOOL_JAVA_OPTS=-Xmx8g scripts/volpool --master "$master" \
      --conf spark.volpool.input=$in --conf spark.volpool.output=$out --conf spark.volpool.output.mode=overwrite \
      --conf spark.volpool.pipeline=identity --conf spark.ui.enabled=false >"$dir/last-run.log" 2>&1
    rc=$?; t1=$(date +%s.%N)
    python3 - "$out/_volpool_summary.json" "$i" "$archive" "$rc" "$t0" "$t1" <<'PY' | tee -a "$log"
import json, sys
d = json.load(open(sys.argv[1])); t = d.get("timeline", {})
print(f"round {sys.argv[2]} archive={sys.argv[3]:3s} rc={sys.argv[4]} process {float(sys.argv[6]) - float(sys.argv[5]):.2f} s"
      f"  job wall {d['wall_seconds']:.2f} s  first task committed {t.get('first_task_committed_seconds')} s")
PY
  done
done
rm -rf "$out" "$dir/last-run.log"
