#!/usr/bin/env bash
# The CPU backend on one large volume under memory budgets: a SIZE int16 .npy volume [1, D, 512, 512] through
# avgpool3d(2) on local[*], the default budget (auto: half the heap) beside explicit ones, alternated ROUNDS times.
# Beside it, in the same run: ../shared/bench/machine_limits.py and PyTorch's AvgPool3d(2) on the same volume.
# Reported per run: the job's wall time (its summary), the process's peak RSS (/usr/bin/time), the slab plan it
# logged, and the output's digest (every budget must give the same bytes). Needs a built job (mvn -q -B -DskipTests
# package). Env: D (642: 321 MiB), ROUNDS (2), BUDGETS ("auto 512m 256m 128m 64m"), DIR (/tmp/volpool-budget),
# OUT (logs: $OUT/cpu-budget.log), VOLPOOL_JAVA_OPTS (-Xmx8g, scripts/volpool's default).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
D=${D:-642}
ROUNDS=${ROUNDS:-2}
BUDGETS=${BUDGETS:-auto 512m 256m 128m 64m}
DIR=${DIR:-/tmp/volpool-budget}
OUT=${OUT:-$DIR/logs}
mkdir -p "$OUT" "$DIR/in"
LOG="$OUT/cpu-budget.log"
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
export VOLPOOL_CLASS_ARCHIVE=${VOLPOOL_CLASS_ARCHIVE:-off}
[ -f "$DIR/in/big.npy" ] || python3 -c "
import numpy as np
np.save('$DIR/in/big.npy', np.random.default_rng(7).integers(-3000, 3000, (1, $D, 512, 512), dtype=np.int16))"
log "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; input $(du -m "$DIR/in/big.npy" | cut -f1) MiB int16" \
  "[1, $D, 512, 512]; budgets $BUDGETS; VOLPOOL_JAVA_OPTS=${VOLPOOL_JAVA_OPTS:--Xmx8g}; commit $(git -C "$root" rev-parse --short HEAD)"
# the anchors, in the same run: the machine's limits for moving bytes, and what a PyTorch user writes (np.load, then
# x.to(torch.float32) and AvgPool3d(2) on as many threads as cores)
python3 "$root/../shared/bench/machine_limits.py" /dev/shm 1 1,"$(nproc)" 2>&1 | sed 's/^/limits: /' | tee -a "$LOG"
for round in $(seq 1 "$ROUNDS"); do
  python3 - "$DIR/in/big.npy" <<'PY' 2>&1 | tee -a "$LOG"
import sys, time, numpy as np, torch
t0 = time.perf_counter(); v = np.load(sys.argv[1]); t1 = time.perf_counter()
y = torch.nn.AvgPool3d(2)(torch.from_numpy(v).to(torch.float32)); t2 = time.perf_counter()
print(f"== anchor torch {torch.__version__} ({torch.get_num_threads()} threads): np.load {t1 - t0:.2f} s, "
      f"to(float32)+AvgPool3d(2) {t2 - t1:.2f} s, total {t2 - t0:.2f} s, output {tuple(y.shape)}")
PY
done
for round in $(seq 1 "$ROUNDS"); do
  for b in $BUDGETS; do
    rm -rf "$DIR/out"
    /usr/bin/time -f "%e %M" -o "$DIR/time" "$root/scripts/volpool" --master 'local[*]' --conf spark.ui.enabled=false \
      --conf spark.volpool.device=cpu --conf spark.volpool.input="$DIR/in" --conf spark.volpool.input.format=npy \
      --conf spark.volpool.output="$DIR/out" --conf spark.volpool.pipeline=avgpool3d \
      --conf spark.volpool.avgpool3d.kernelSize=2 --conf spark.volpool.memory.budget="$b" >"$OUT/run-$round-$b.log" 2>&1
    wall=$(python3 -c "import json; print(round(json.load(open('$DIR/out/_volpool_summary.json'))['wall_seconds'], 2))")
    read -r secs rss < "$DIR/time"
    plan=$(grep -oE "runs alone on [^:]*: .*|slabs of [0-9]+ output planes[^,]*" "$OUT/run-$round-$b.log" | head -1 | cut -c1-160)
    digest=$(sha256sum "$DIR"/out/*.npy | cut -c1-12)
    log "round $round budget=$b: wall ${wall} s (process ${secs} s), peak RSS $((rss / 1024)) MiB, output $digest; ${plan:-whole}"
  done
done
