#!/usr/bin/env bash
# Slabs on the GPU (issue 13), in one call on the GPU machine after scripts/device/device-gpu-run.sh has the
# staged runtime; datasets on /dev/shm (the disk out of the figure):
#  1. 64 reference volumes [32,128,128,256] (.npy, 512 MiB each, 32 GiB) through avgpool3d on the GPU,
#     local[16]: whole (default budget), in slabs under a budget of 64 MiB (one eighth of a volume, for
#     the whole executor: two slab runs at a time), whole under 160 MiB (two batches at a time); then
#     local[2], whole and in slabs under 64 MiB (the same two at a time); outputs compared by checksum.
#  2. One 4 GiB .npy [64,256,256,256] through avgpool3d, whole and in slabs (256 MiB budget).
#  3. One 4.5 GiB volume stored across rows [18,1024,256,256] through avgpool3d (slabs, rows to rows),
#     and one of 288 MiB [3,384,256,256] through fused (rows to rows, 1.5 GiB of output rows).
# SLABS_QUICK=1 runs only part 1's whole and 64 MiB runs, alternated PAIRS (default 2) times (issue 13's target);
# with SLABS_BIG=1 parts 2 and 3 follow.
# Per run: wall, GB/s in (whole run and steady state), peak budget, the JVM's peak RSS and the GPU's
# peak memory (nvidia-smi every 100 ms). Logs: $OUT/gpu-slabs.log, $OUT/gpu-slabs.jsonl.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=/tmp/stage/jre/bin/java
. "$(dirname "$0")/../lib/java-opens.sh"
CP="$(ls /tmp/stage/lib/*.jar | grep -v -e console-standalone -e -tests.jar | tr '\n' ':')"
LOG="$OUT/gpu-slabs.log"
SUM="$OUT/gpu-slabs.jsonl"
N=${N:-64}
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }

# one run: NAME INPUT OUTPUT PIPELINE [more --conf args]
job() {
  local name=$1 in=$2 out=$3 pipe=$4; shift 4
  rm -rf "$out"
  log "volpool $name"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > /tmp/gpumem.txt 2>/dev/null &
  local smi=$!
  python3 - "$LOG" "$J" -Xmx${HEAP:-64g} $JAVA_OPENS -Dlog4j2.configurationFile=conf/log4j2.properties -cp "$CP" \
    io.volpool.job.VolpoolMain --master "${MASTER:-local[16]}" --conf spark.ui.enabled=false --conf spark.volpool.input="$in" \
    --conf spark.volpool.output="$out" --conf spark.volpool.pipeline="$pipe" --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 --conf spark.volpool.device=gpu \
    --conf spark.volpool.output.mode=overwrite --conf spark.volpool.fused.weights=conf/models/fused_seed.safetensors "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "a") as log:
    rc = subprocess.call(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
open("/tmp/peakrss", "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024))
sys.exit(rc)
PY
  local rc=$?
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  local gpu; gpu=$(sort -n /tmp/gpumem.txt | tail -1)
  if [ -f "$out/_volpool_summary.json" ]; then
    python3 - "$out/_volpool_summary.json" "$name" "$(cat /tmp/peakrss)" "$gpu" <<'PY' | tee -a "$LOG"
import json, sys
d = json.load(open(sys.argv[1])); d.pop("settings", None)
d["run"], d["peak_rss_mib"], d["peak_gpu_mib"] = sys.argv[2], int(sys.argv[3]), int(sys.argv[4] or 0)
open(sys.argv[1] + ".bench", "w").write(json.dumps(d))
t = d.get("timeline", {})
ph = {k: v for k, v in d["phase_seconds_summed_over_tasks"].items() if v}
print(f"    {d['run']:24s} {d['volumes_in']} vol {d['wall_seconds']:.2f} s  {d['gb_per_second_in']:.2f} GB/s in,"
      f" steady {t.get('steady_gb_per_second_in')} GB/s  slabbed {d['volumes_in_slabs']}  peak budget"
      f" {d['peak_budget_bytes'] >> 20} MiB  peak RSS {d['peak_rss_mib']} MiB  peak GPU {d['peak_gpu_mib']} MiB  {ph}")
PY
    cat "$out/_volpool_summary.json.bench" >> "$SUM"; echo >> "$SUM"
  else
    echo "    $name FAILED rc=$rc: $(grep -a 'volpool: FAILED' "$LOG" | tail -1)" | tee -a "$LOG"
  fi
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g | head -2; df -h /dev/shm | tail -1; date -u; } >>"$LOG" 2>&1
log "datasets: $N reference volumes .npy (16 writers)"
python3 - /dev/shm/slab-ref "$N" <<'PY' >>"$LOG" 2>&1
import numpy as np, os, sys
from concurrent.futures import ProcessPoolExecutor
d, n = sys.argv[1], int(sys.argv[2]); os.makedirs(d, exist_ok=True)
def one(i):
    np.save(f"{d}/vol{i:03d}.npy", np.random.default_rng(i).standard_normal((32, 128, 128, 256), dtype=np.float32))
with ProcessPoolExecutor(16) as ex:
    list(ex.map(one, range(n)))
print("written", n)
PY
du -sh /dev/shm/slab-ref | tee -a "$LOG"
log "machine: dd of /dev/shm from 16 processes"
( time (ls /dev/shm/slab-ref/*.npy | head -16 | xargs -P16 -I{} dd if={} of=/dev/null bs=8M status=none) ) 2>&1 | grep real | tee -a "$LOG"
echo "    16 x 512 MiB read" | tee -a "$LOG"
NPY="--conf spark.volpool.input.format=npy --conf spark.volpool.output.format=npy"
if [ "${SLABS_QUICK:-0}" = 1 ]; then
  # issue 13's target alone: whole against slabs under 64 MiB (1/8 of a volume), alternated, PAIRS times each
  # (each pair's outputs checked by checksum, then removed: /dev/shm holds 64 GiB)
  for r in $(seq 1 "${PAIRS:-2}"); do
    job whole-64-r$r /dev/shm/slab-ref /dev/shm/slab-out-whole-r$r avgpool3d $NPY
    job slabs-64m-r$r /dev/shm/slab-ref /dev/shm/slab-out-64m-r$r avgpool3d $NPY --conf spark.volpool.memory.budget=64m
    for o in whole-r$r 64m-r$r; do
      [ -d /dev/shm/slab-out-$o ] && (cd /dev/shm/slab-out-$o && sha256sum *.npy | sha256sum | sed "s/-$/slab-out-$o/") | tee -a "$LOG"
      rm -rf /dev/shm/slab-out-$o
    done
  done
  rm -rf /dev/shm/slab-out-* /dev/shm/slab-ref
  log "done (quick)"
  [ "${SLABS_BIG:-0}" = 1 ] || exit 0
else
job whole-64 /dev/shm/slab-ref /dev/shm/slab-out-whole avgpool3d $NPY
job slabs-64m /dev/shm/slab-ref /dev/shm/slab-out-64m avgpool3d $NPY --conf spark.volpool.memory.budget=64m
# the same two with the pinned pool the warm-up allocates (issue 15): no cuMemHostAlloc in the tasks
job whole-64-pool /dev/shm/slab-ref /dev/shm/slab-out-whole-pool avgpool3d $NPY --conf spark.volpool.gpu.pinnedPool.size=8g
job slabs-64m-pool /dev/shm/slab-ref /dev/shm/slab-out-64m-pool avgpool3d $NPY --conf spark.volpool.memory.budget=64m \
  --conf spark.volpool.gpu.pinnedPool.size=64m
for o in whole-pool 64m-pool; do  # checked and removed now: /dev/shm holds 64 GiB
  [ -d /dev/shm/slab-out-$o ] && (cd /dev/shm/slab-out-$o && sha256sum *.npy | sha256sum | sed "s/-$/slab-out-$o/") | tee -a "$LOG"
  rm -rf /dev/shm/slab-out-$o
done
job slabs-160m /dev/shm/slab-ref /dev/shm/slab-out-160m avgpool3d $NPY --conf spark.volpool.memory.budget=160m
# the same two task slots for both (a 64 MiB budget admits two slab runs at once): the slab machinery alone
MASTER='local[2]' job whole-64-2slots /dev/shm/slab-ref /dev/shm/slab-out-whole2 avgpool3d $NPY
MASTER='local[2]' job slabs-64m-2slots /dev/shm/slab-ref /dev/shm/slab-out-64m2 avgpool3d $NPY --conf spark.volpool.memory.budget=64m
for o in whole 64m 160m whole2 64m2; do
  [ -d /dev/shm/slab-out-$o ] && (cd /dev/shm/slab-out-$o && sha256sum *.npy | sha256sum | sed "s/-$/slab-out-$o/") | tee -a "$LOG"
done
rm -rf /dev/shm/slab-out-* /dev/shm/slab-ref
fi
log "one 4 GiB .npy [64,256,256,256]"
python3 -c "import numpy as np, os; os.makedirs('/dev/shm/big-npy', exist_ok=True); np.save('/dev/shm/big-npy/big.npy', np.random.default_rng(4).standard_normal((64, 256, 256, 256), dtype=np.float32))"
job big-npy-whole /dev/shm/big-npy /dev/shm/big-out-whole avgpool3d $NPY
job big-npy-slabs-256m /dev/shm/big-npy /dev/shm/big-out-slabs avgpool3d $NPY --conf spark.volpool.memory.budget=256m
cmp /dev/shm/big-out-whole/big.npy /dev/shm/big-out-slabs/big.npy && echo "    4 GiB volume: whole and slabs identical" | tee -a "$LOG"
rm -rf /dev/shm/big-npy /dev/shm/big-out-*
log "one 4.5 GiB volume across rows [18,1024,256,256], 16 planes per row"
python3 examples/volumes_across_rows.py write /dev/shm/big-rows 18 1024 256 256 16 >>"$LOG" 2>&1
job rows-avgpool-512m /dev/shm/big-rows /dev/shm/rows-out avgpool3d --conf spark.volpool.memory.budget=512m \
  --conf spark.volpool.output.rowBytes=64m
rm -rf /dev/shm/big-rows /dev/shm/rows-out
log "one 288 MiB volume across rows [3,384,256,256] through fused"
python3 examples/volumes_across_rows.py write /dev/shm/fused-rows 3 384 256 256 32 >>"$LOG" 2>&1
job rows-fused-512m /dev/shm/fused-rows /dev/shm/rows-out fused --conf spark.volpool.memory.budget=512m \
  --conf spark.volpool.output.rowBytes=256m
rm -rf /dev/shm/fused-rows /dev/shm/rows-out
log done
