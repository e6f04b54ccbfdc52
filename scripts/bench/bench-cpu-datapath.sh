#!/usr/bin/env bash
# The CPU data-path benchmark (issue 15's CPU target): the identity job beside Spark's own read and
# copy of the same files (SparkCeiling, built in bench/), on this machine, in one run.
#
#   scripts/bench/bench-cpu-datapath.sh LOG_DIR [VOLUMES=24576] [FILES=24] [MASTER=local[2]]
#
# Builds nothing (run mvn -q -B -DskipTests install first; the class archive is remade when stale). Writes VOLUMES reference volumes
# [3,16,32,32] with Spark's writer (snappy, SampleData) to /dev/shm, runs SparkCeiling (read only, copy,
# row mapPartitions copy; each twice, the second warm), keeps its uncompressed copy as the
# uncompressed set, then volpool's identity job twice on each set and fused,avgpool3d once, and the
# machine's own limits: dd of one input file, and of all of them from as many processes as cores;
# memcpy and read() by one thread (scripts/bench/machine-limits.py).
# LOG_DIR gets datapath.log and summaries.jsonl (one run summary per line).
# SNAPPY_ONLY=1: Spark's copies go to CEILING_DIR (default /dev/shm; a disk folder leaves room in /dev/shm
# for a larger set), and volpool runs only the identity job on the snappy set, twice (the CPU target's
# comparison), not the uncompressed set or the pipeline.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:?usage: bench-cpu-datapath.sh LOG_DIR [VOLUMES] [FILES] [MASTER]}
vols=${2:-24576}; files=${3:-24}; master=${4:-local[2]}
mkdir -p "$dir"; LOG="$dir/datapath.log"; SUM="$dir/summaries.jsonl"; : >"$LOG"; : >"$SUM"
. "$root/scripts/lib/java-opens.sh"
CP="$root/job/target/lib/*"
log() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
{ date -u; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; java -version 2>&1 | head -1; git -C "$root" rev-parse --short HEAD; } >>"$LOG" 2>&1
# volpool's runs start as scripts/volpool does for a user after scripts/demo: with a fresh class archive
"$root/scripts/class-archive" --if-stale >>"$LOG" 2>&1
shm=/dev/shm/volpool-bench; rm -rf "$shm"; mkdir -p "$shm"
trap 'rm -rf "$shm"' EXIT
log "dataset: $vols reference volumes in $files files (Spark's writer, snappy)"
VOLPOOL_MAIN=io.volpool.job.SampleData "$root/scripts/volpool" "$shm/snappy" "$vols" "$files" 2>&1 | tail -1 | tee -a "$LOG"
du -sh "$shm/snappy" | tee -a "$LOG"

log "machine: dd of one file, then of every file from $(nproc) processes"
dd if="$(ls "$shm"/snappy/*.parquet | head -1)" of=/dev/null bs=8M 2>&1 | tail -1 | tee -a "$LOG"
( time (ls "$shm"/snappy/*.parquet | xargs -P"$(nproc)" -I{} dd if={} of=/dev/null bs=8M status=none) ) 2>&1 | grep real | tee -a "$LOG"
python3 "$root/scripts/bench/machine-limits.py" "$(ls "$shm"/snappy/*.parquet | head -1)" 2>&1 | tee -a "$LOG"

log "anchor: SparkCeiling ($master)"
ceiling=${CEILING_DIR:-$shm}/ceiling
java -Xmx8g $JAVA_OPENS -cp "$(ls "$root"/bench/target/volpool-bench-*[0-9T].jar):$CP" SparkCeiling "$shm/snappy" "$ceiling" "$master" 2>&1 \
  | grep -E "^(read_only|read_write_copy|row_mappartitions_copy)" | tee -a "$LOG"
rm -rf "$ceiling-rows"
if [ "${SNAPPY_ONLY:-0}" = 1 ]; then
  rm -rf "$ceiling-copy"
else
  mv "$ceiling-copy" "$shm/none"
fi

job() { # NAME INPUT PIPELINE
  local name=$1 in=$2 pipe=$3 t0 t1
  rm -rf "$shm/out"
  log "volpool $name"
  t0=$(date +%s.%N)
  VOLPOOL_JAVA_OPTS=-Xmx8g "$root/scripts/volpool" --master "$master" --conf spark.volpool.input="$in" \
    --conf spark.volpool.output="$shm/out" --conf spark.volpool.pipeline="$pipe" --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 --conf spark.volpool.device=cpu \
    --conf spark.volpool.fused.weights="$root/conf/models/fused_seed.safetensors" >>"$LOG" 2>&1
  local rc=$?; t1=$(date +%s.%N)
  if [ -f "$shm/out/_volpool_summary.json" ]; then
    python3 - "$shm/out/_volpool_summary.json" "$name" "$t0" "$t1" <<'EOF' | tee -a "$LOG"
import json, sys
d = json.load(open(sys.argv[1])); d.pop("settings", None); d["run"] = sys.argv[2]
d["process_seconds"] = round(float(sys.argv[4]) - float(sys.argv[3]), 2)
open(sys.argv[1] + ".line", "w").write(json.dumps(d))
t = d["timeline"]
print(f"    {d['run']}: {d['volumes_in']} volumes, process {d['process_seconds']} s, job {d['wall_seconds']} s,"
      f" {d['volumes_per_second']} volumes/s ({d['gb_per_second_in']} GB/s in); first commit"
      f" {t['first_task_committed_seconds']} s, steady {t['steady_volumes_per_second']} volumes/s; phases (task-s)"
      f" {({k: round(v, 2) for k, v in d['phase_seconds_summed_over_tasks'].items() if v})}")
EOF
    cat "$shm/out/_volpool_summary.json.line" >>"$SUM"; echo >>"$SUM"
  else
    echo "    $name FAILED rc=$rc: $(grep -a 'volpool: FAILED' "$LOG" | tail -1)" | tee -a "$LOG"
  fi
}
job identity-snappy "$shm/snappy" identity
job identity-snappy-2 "$shm/snappy" identity
if [ "${SNAPPY_ONLY:-0}" = 1 ]; then
  log done
  exit 0
fi
job identity-uncompressed "$shm/none" identity
job identity-uncompressed-2 "$shm/none" identity
job pipeline-snappy "$shm/snappy" fused,avgpool3d
log done
