#!/usr/bin/env bash
# Several GPUs (issues 8, 17) on the 2-GPU machine, after the staged runtime is unpacked: the same VOLS
# (default 262,144: 48 GiB, over 30 s of work for one GPU) reference volumes through (1) one GPU, local[16]; (2) a standalone cluster of two workers with one GPU
# each; (3) one executor owning both GPUs. Outputs must be identical (scripts/bench/output-checksum.py, pyarrow);
# throughput ratios and each run's phases go to $OUT/multigpu.log and $OUT/summaries.jsonl.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=/tmp/stage/jre/bin/java
. "$(dirname "$0")/../lib/java-opens.sh"
CP="$(ls /tmp/stage/lib/*.jar | grep -v -e console-standalone -e -tests.jar -e -spark.jar | tr '\n' ':')"
LOG="$OUT/multigpu.log"; SUM="$OUT/summaries.jsonl"
VOLS=${VOLS:-262144}
FILES=${FILES:-128}
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
# volumes/s between the progress lines nearest 10% and 90% of the input: the rate without start-up and tail
steady() {
  python3 - "$OUT/$1.log" "$1" <<'PY' | tee -a "$LOG"
import re, sys
pts = [(int(m.group(3)), int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
       for m in re.finditer(r"volpool progress: ([\d,]+) of ([\d,]+) volumes.* (\d+) s elapsed", open(sys.argv[1]).read())]
if len(pts) >= 2:
    total = pts[-1][2]
    a = next((p for p in pts if p[1] >= 0.1 * total), pts[0])
    b = [p for p in pts if p[1] <= 0.9 * total and p[0] > a[0]]
    b = b[-1] if b else pts[-1]
    if b[0] > a[0]:
        print(f"    {sys.argv[2]} steady: {(b[1] - a[1]) / (b[0] - a[0]):.0f} vol/s between {a[1]} at {a[0]} s and {b[1]} at {b[0]} s")
PY
}
summary() {  # NAME OUTPUT   (the run's log is $OUT/NAME.log)
  grep -E 'volpool: FAILED|volpool progress' "$OUT/$1.log" | tail -3 | sed "s/^/    $1 /" | tee -a "$LOG"
  steady "$1"
  python3 -c "import json; d=json.load(open('$2/_volpool_summary.json')); d.pop('settings',None); d['run']='$1'; print(json.dumps(d))" >>"$SUM"
  python3 -c "import json; d=json.load(open('$2/_volpool_summary.json')); print('   ', '$1', d['volumes_in'], 'vol', d['wall_seconds'], 's', d['volumes_per_second'], 'vol/s', d['backend'], {k:v for k,v in d['phase_seconds_summed_over_tasks'].items() if v})" | tee -a "$LOG"
  python3 scripts/bench/output-checksum.py "$2" | sed "s/^/    $1 /" | tee -a "$LOG"
  rm -rf "$2"  # /dev/shm holds the input and one output at a time
}
nvidia-smi --query-gpu=index,name,memory.total --format=csv >>"$LOG" 2>&1; nproc >>"$LOG"
log "dataset"
REF=${REF:-/dev/shm/ref-snappy}
[ -d "$REF" ] || python3 scripts/bench/bench-data.py "$REF" "$VOLS" "$FILES" --compression snappy --no-dictionary --jobs "$(nproc)" >>"$LOG" 2>&1
du -sh "$REF" | tee -a "$LOG"
W=conf/models/fused_seed.safetensors
log "one GPU, local[16]"
CUDA_VISIBLE_DEVICES=0 "$J" -Xmx16g $JAVA_OPENS -Dlog4j2.configurationFile=conf/log4j2.properties -cp "$CP" io.volpool.job.VolpoolMain \
  --master "local[16]" --conf spark.ui.enabled=false --conf spark.volpool.input=$REF --conf spark.volpool.output=/dev/shm/one \
  --conf spark.volpool.device=gpu --conf spark.volpool.pipeline=fused,avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 --conf spark.volpool.fused.weights=$W --conf spark.volpool.output.mode=overwrite >"$OUT/one-gpu.log" 2>&1
summary one-gpu /dev/shm/one
submit() {  # NAME OUTPUT CONF...
  local name=$1 out=$2; shift 2
  WORKER_MEMORY=64g bash scripts/standalone-cluster.sh submit /tmp/cl 7077 --conf spark.volpool.input=$REF \
    --conf spark.volpool.output=$out --conf spark.volpool.device=gpu --conf spark.volpool.pipeline=fused,avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 --conf spark.volpool.fused.weights=$PWD/$W \
    --conf spark.volpool.output.mode=overwrite --conf spark.volpool.output.sharedFilesystem=true --conf spark.executor.memory=48g \
    --conf spark.executor.resource.gpu.discoveryScript=$PWD/scripts/get-gpus-resources.sh "$@" >"$OUT/$name.log" 2>&1
  summary "$name" "$out"
}
log "two workers, one GPU each, 16 cores each"
WORKER_MEMORY=64g bash scripts/standalone-cluster.sh start /tmp/cl 7077 2 16 1 | tee -a "$LOG"
submit two-workers /dev/shm/two --conf spark.executor.cores=16 --conf spark.executor.resource.gpu.amount=1 \
  --conf spark.task.resource.gpu.amount=0.0625
grep -l "Running task" /tmp/cl/worker*/app-*/*/stderr | sed 's/^/    tasks ran in /' | tee -a "$LOG"
bash scripts/standalone-cluster.sh stop /tmp/cl; rm -rf /tmp/cl
log "one executor with both GPUs, 32 cores"
WORKER_MEMORY=96g bash scripts/standalone-cluster.sh start /tmp/cl 7077 1 32 2 | tee -a "$LOG"
submit one-executor-two-gpus /dev/shm/both --conf spark.executor.cores=32 --conf spark.executor.resource.gpu.amount=2 \
  --conf spark.task.resource.gpu.amount=0.0625 --conf spark.executor.memory=80g
grep -h "CUDA device" /tmp/cl/worker0/app-*/*/stderr | sed 's/^/    /' | tee -a "$LOG"
bash scripts/standalone-cluster.sh stop /tmp/cl
python3 - "$SUM" <<'PY' | tee -a "$LOG"
import json, sys
runs = {d["run"]: d for d in map(json.loads, open(sys.argv[1]))}
one = runs["one-gpu"]["volumes_per_second"]
for name in ("two-workers", "one-executor-two-gpus"):
    if name in runs:
        print(f"    {name}: {runs[name]['volumes_per_second']:.0f} vol/s = {runs[name]['volumes_per_second'] / one:.2f}x one GPU ({one:.0f} vol/s)")
PY
log "done"
