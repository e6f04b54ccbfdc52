#!/usr/bin/env bash
# Several GPUs (issue 8) on the 2-GPU machine, after the staged runtime is unpacked: the same 32,768
# reference volumes through (1) one GPU, local[16]; (2) a standalone cluster of two workers with one GPU
# each; (3) one executor owning both GPUs. Outputs must be identical (scripts/output-checksum.py, pyarrow);
# throughput ratios and each run's phases go to $OUT/multigpu.log and $OUT/summaries.jsonl.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=/tmp/stage/jre/bin/java
. "$(dirname "$0")/lib/java-opens.sh"
CP="$(ls /tmp/stage/lib/*.jar | grep -v -e console-standalone -e -tests.jar -e -spark.jar | tr '\n' ':')"
LOG="$OUT/multigpu.log"; SUM="$OUT/summaries.jsonl"
VOLS=${VOLS:-32768}
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
summary() {  # NAME OUTPUT
  python3 -c "import json; d=json.load(open('$2/_volpool_summary.json')); d.pop('settings',None); d['run']='$1'; print(json.dumps(d))" >>"$SUM"
  python3 -c "import json; d=json.load(open('$2/_volpool_summary.json')); print('   ', '$1', d['rows_in'], 'vol', d['wall_seconds'], 's', d['volumes_per_second'], 'vol/s', d['backend'], {k:v for k,v in d['phase_seconds_summed_over_tasks'].items() if v})" | tee -a "$LOG"
  python3 scripts/output-checksum.py "$2" | sed "s/^/    $1 /" | tee -a "$LOG"
}
nvidia-smi --query-gpu=index,name,memory.total --format=csv >>"$LOG" 2>&1; nproc >>"$LOG"
log "dataset"
REF=${REF:-/dev/shm/ref-snappy}
[ -d "$REF" ] || python3 scripts/bench-data.py "$REF" "$VOLS" 64 --compression snappy --no-dictionary >>"$LOG" 2>&1
W=conf/models/fused_seed.safetensors
log "one GPU, local[16]"
CUDA_VISIBLE_DEVICES=0 "$J" -Xmx16g $JAVA_OPENS -Dlog4j2.configurationFile=conf/log4j2.properties -cp "$CP" io.volpool.job.VolpoolMain \
  --master "local[16]" --conf spark.ui.enabled=false --conf spark.volpool.input=$REF --conf spark.volpool.output=/dev/shm/one \
  --conf spark.volpool.device=gpu --conf spark.volpool.fused.weights=$W --conf spark.volpool.mode=overwrite >>"$LOG" 2>&1
summary one-gpu /dev/shm/one
submit() {  # NAME OUTPUT CONF...
  local name=$1 out=$2; shift 2
  WORKER_MEMORY=64g bash scripts/standalone-cluster.sh submit /tmp/cl 7077 --conf spark.volpool.input=$REF \
    --conf spark.volpool.output=$out --conf spark.volpool.device=gpu --conf spark.volpool.fused.weights=$PWD/$W \
    --conf spark.volpool.mode=overwrite --conf spark.volpool.output.sharedFilesystem=true --conf spark.executor.memory=48g \
    --conf spark.executor.resource.gpu.discoveryScript=$PWD/scripts/get-gpus-resources.sh "$@" >>"$LOG" 2>&1
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
log "done"
