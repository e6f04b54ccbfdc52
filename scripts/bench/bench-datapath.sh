#!/usr/bin/env bash
# The data-path benchmark of the whole job on the GPU machine (issue 6), in one call, beside its anchors:
# Spark's own Parquet read/copy of the same files (SparkCeiling), raw pages to pinned memory and the GPU
# (PinnedRead), and pyarrow + PyTorch on 512 MiB volumes (large_volume_anchor.py). Datasets on /dev/shm,
# and the reference set once on local disk. Runs after scripts/device/device-gpu-run.sh has the staged runtime.
# Writes $OUT/datapath.log and $OUT/summaries.jsonl (one run summary per line). See docs/benchmarks.md.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=/tmp/stage/jre/bin/java
. "$(dirname "$0")/../lib/java-opens.sh"
. "$(dirname "$0")/../lib/wall-profile.sh"
CP="$(ls /tmp/stage/lib/*.jar | grep -v -e console-standalone -e -tests.jar | tr '\n' ':')"
LOG="$OUT/datapath.log"
SUM="$OUT/summaries.jsonl"
VOLS=${VOLS:-32768}
BIG=${BIG:-16}
# QUICK=1: the snappy and uncompressed sets only (no zstd, CPU, local-disk or large-volume runs), with
# the machine's own read limit (dd from 16 processes) measured first; issue 15's read figures
QUICK=${QUICK:-0}
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }

# INC=1: a third set of the same volumes scaled instead of shifted (bench-data.py --incompressible: every page
# hardly compresses, as measured data with noise), snappy, with PinnedRead and the pipeline on it; OLD=DIR: volpool's
# own jars of another commit in DIR, run alternated with these on that set (JOB_CP picks the jars of one run)
INC=${INC:-0}
OLD=${OLD:-}
# one volpool run: NAME INPUT OUTPUT PIPELINE DEVICE [HEAP] [more --conf args]
job() {
  local name=$1 in=$2 out=$3 pipe=$4 dev=$5 heap=${6:-8g}; shift 6
  rm -rf "$out"
  log "volpool $name"
  "$J" -Xmx$heap ${JOB_JAVA_OPTS:-} $JAVA_OPENS -Dlog4j2.configurationFile=conf/log4j2.properties -cp "${JOB_CP:-$CP}" io.volpool.job.VolpoolMain \
    --master "local[16]" --conf spark.ui.enabled=false --conf spark.volpool.input="$in" --conf spark.volpool.output="$out" \
    --conf spark.volpool.pipeline="$pipe" --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 --conf spark.volpool.device="$dev" \
    --conf spark.volpool.fused.weights=conf/models/fused_seed.safetensors "$@" >>"$LOG" 2>&1
  local rc=$?
  if [ -f "$out/_volpool_summary.json" ]; then
    python3 -c "import json,sys; d=json.load(open('$out/_volpool_summary.json')); d.pop('settings',None); d['run']='$name'; print(json.dumps(d))" >>"$SUM"
    python3 -c "import json; d=json.load(open('$out/_volpool_summary.json')); print('   ', '$name', d['rows_in'], 'vol', d['wall_seconds'], 's', d['volumes_per_second'], 'vol/s', d['gb_per_second_in'], 'GB/s in', {k:v for k,v in d['phase_seconds_summed_over_tasks'].items() if v})" | tee -a "$LOG"
  else
    echo "    $name FAILED rc=$rc: $(grep -a 'volpool: FAILED' "$LOG" | tail -1)" | tee -a "$LOG"
  fi
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g | head -2; df -h /dev/shm /tmp | tail -2; date -u; } >>"$LOG" 2>&1
log "datasets ($VOLS reference volumes, 64 files, row groups of 128, pyarrow)"
# no dictionary: PinnedRead then reads the real values (with pyarrow's default dictionary the data pages hold
# only indices and the values sit in dictionary pages, which PinnedRead does not read)
python3 scripts/bench/bench-data.py /dev/shm/ref-snappy "$VOLS" 64 --compression snappy --no-dictionary --jobs 16 >>"$LOG" 2>&1
[ "$QUICK" = 1 ] || python3 scripts/bench/bench-data.py /dev/shm/ref-zstd "$VOLS" 64 --compression zstd --no-dictionary --jobs 16 >>"$LOG" 2>&1
python3 scripts/bench/bench-data.py /dev/shm/ref-none "$VOLS" 64 --compression none --no-dictionary --jobs 16 >>"$LOG" 2>&1
[ "$INC" = 1 ] && python3 scripts/bench/bench-data.py /dev/shm/ref-inc "$VOLS" 64 --compression snappy --no-dictionary --jobs 16 \
  --incompressible >>"$LOG" 2>&1
du -sh /dev/shm/ref-* >>"$LOG"
log "machine: dd of /dev/shm from 16 processes (16 of the uncompressed files), then one"
( time (ls /dev/shm/ref-none/*.parquet | head -16 | xargs -P16 -I{} dd if={} of=/dev/null bs=8M status=none) ) 2>&1 | grep real | tee -a "$LOG"
du -ch $(ls /dev/shm/ref-none/*.parquet | head -16) | tail -1 | tee -a "$LOG"
dd if="$(ls /dev/shm/ref-none/*.parquet | head -1)" of=/dev/null bs=8M 2>&1 | tail -1 | tee -a "$LOG"
log "machine: memcpy and read() by one thread (scripts/bench/machine-limits.py)"
python3 scripts/bench/machine-limits.py "$(ls /dev/shm/ref-none/*.parquet | head -1)" 2>&1 | tee -a "$LOG"

log "anchors: SparkCeiling (Spark's own read and copy of ref-snappy)"
"$J" -Xmx48g $JAVA_OPENS -cp "$CP" SparkCeiling /dev/shm/ref-snappy /dev/shm/ceiling "local[16]" 2>&1 \
  | grep -E "read_only|copy" | tee -a "$LOG"
rm -rf /dev/shm/ceiling-*
log "anchors: PinnedRead (raw data pages to pinned memory and the GPU, no Spark), 16 threads"
"$J" -Xmx48g -cp "$CP" PinnedRead /dev/shm/ref-snappy 16 gpu 2>&1 | tail -3 | tee -a "$LOG"

if [ "$INC" = 1 ]; then
  log "anchors: PinnedRead on the incompressible snappy set, 16 threads"
  "$J" -Xmx48g -cp "$CP" PinnedRead /dev/shm/ref-inc 16 gpu 2>&1 | tail -3 | tee -a "$LOG"
  CPOLD=""
  [ -n "$OLD" ] && CPOLD="$(echo "$CP" | tr ':' '\n' | grep -v '/volpool-' | tr '\n' ':')$(ls "$OLD"/volpool-*.jar | tr '\n' ':')"
  for round in 1 2; do
    job "gpu-pipeline-snappy-inc-$round" /dev/shm/ref-inc /dev/shm/o1 fused,avgpool3d gpu 8g
    [ -n "$OLD" ] && JOB_CP="$CPOLD" job "gpu-pipeline-snappy-inc-old-$round" /dev/shm/ref-inc /dev/shm/o1 fused,avgpool3d gpu 8g
  done
  job gpu-identity-snappy-inc /dev/shm/ref-inc /dev/shm/o1 identity gpu 8g
  rm -rf /dev/shm/ref-inc
fi
job gpu-pipeline-snappy /dev/shm/ref-snappy /dev/shm/o1 fused,avgpool3d gpu 8g
job gpu-identity-snappy /dev/shm/ref-snappy /dev/shm/o1 identity gpu 8g
[ "$QUICK" = 1 ] || job gpu-pipeline-zstd /dev/shm/ref-zstd /dev/shm/o1 fused,avgpool3d gpu 8g
job gpu-pipeline-uncompressed /dev/shm/ref-none /dev/shm/o1 fused,avgpool3d gpu 8g
job gpu-identity-uncompressed /dev/shm/ref-none /dev/shm/o1 identity gpu 8g
# AB_CONFS="NAME:KEY=VALUE[,KEY=VALUE] ...": more runs of the uncompressed pipeline with these settings,
# each alternated with the default twice (settings worth a default change, measured in one call)
for round in 1 2; do
  for ab in ${AB_CONFS:-}; do
    extra=(); IFS=, read -ra kvs <<<"${ab#*:}"; for kv in "${kvs[@]}"; do extra+=(--conf "$kv"); done
    job "gpu-pipeline-uncompressed-${ab%%:*}-$round" /dev/shm/ref-none /dev/shm/o1 fused,avgpool3d gpu 8g "${extra[@]}"
    job "gpu-pipeline-uncompressed-default-$round" /dev/shm/ref-none /dev/shm/o1 fused,avgpool3d gpu 8g
  done
done
if [ -n "${PROFILER:-}" ]; then
  # the uncompressed pipeline once more under async-profiler's wall clock (PROFILER: libasyncProfiler.so), every
  # thread at 5 ms: collapsed stacks in $OUT/wall-datapath.txt.gz, the task threads' summary in the log
  JOB_JAVA_OPTS=$(wall_profile_opt /tmp/wall-datapath.txt) \
    job gpu-pipeline-uncompressed-profiled /dev/shm/ref-none /dev/shm/o1 fused,avgpool3d gpu 8g
  wall_profile_report /tmp/wall-datapath.txt datapath | tee -a "$LOG"
fi
if [ "$QUICK" = 1 ]; then
  rm -rf /dev/shm/o1 /dev/shm/ref-*
  log "done (quick)"
  exit 0
fi
job cpu-pipeline-snappy /dev/shm/ref-snappy /dev/shm/o1 fused,avgpool3d cpu 8g
rm -rf /dev/shm/o1
log "reference set on local disk (page cache dropped when allowed)"
rm -rf /tmp/ref-disk; cp -r /dev/shm/ref-snappy /tmp/ref-disk; sync
(echo 3 > /proc/sys/vm/drop_caches) 2>>"$LOG" && echo "    page cache dropped" | tee -a "$LOG"
job gpu-pipeline-snappy-disk /tmp/ref-disk /tmp/o-disk fused,avgpool3d gpu 8g
rm -rf /tmp/o-disk /tmp/ref-disk /dev/shm/ref-zstd /dev/shm/ref-none
log "memory: the same large volumes with -Xmx8g (the default) and local[16] done above; pyarrow reads our output:"

log "large volumes: $BIG x [32,128,128,256] (512 MiB each), pyarrow uncompressed"
python3 bench/anchors/large_volume_anchor.py gen /dev/shm/big "$BIG" >>"$LOG" 2>&1
python3 bench/anchors/large_volume_anchor.py torch /dev/shm/big /dev/shm/big-torch 2>&1 | tee -a "$LOG"
rm -rf /dev/shm/big-torch
job gpu-avgpool-big /dev/shm/big /dev/shm/big-out avgpool3d gpu 8g
python3 bench/anchors/large_volume_anchor.py check /dev/shm/big /dev/shm/big-out 2>&1 | tail -1 | tee -a "$LOG"
rm -rf /dev/shm/big-out
log "done"
