#!/usr/bin/env bash
# Runs on the GPU machine (see docs/gpu-testing.md), after the staged parts are unpacked into
# /tmp/stage: the GPU tests through JUnit's console launcher, then the GPU and CPU benchmarks and
# PyTorch's anchors in the same call. Logs and JSON go to $OUT. Usage: scripts/device-gpu-run.sh [tests|bench|all]
set -uo pipefail
what=${1:-all}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=/tmp/stage/jre/bin/java
LIB=/tmp/stage/lib
GOLDEN=${GOLDEN:-.stage/golden}
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nproc; date -u; } | tee "$OUT/machine.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
  "$J" -Xmx8g -Dvolpool.golden="$GOLDEN" -jar "$LIB"/junit-platform-console-standalone-*.jar execute \
    --class-path "$(ls "$LIB"/*.jar | grep -v console-standalone | tr '\n' ':')" \
    --scan-class-path "$(ls "$LIB"/volpool-udf-*-tests.jar)" --details=summary --disable-banner \
    --reports-dir "$OUT/junit" 2>&1 | tee "$OUT/gpu-tests.log" | grep -vE '^\s+at ' | tail -60
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  CP="$(ls "$LIB"/*.jar | grep -v console-standalone | tr '\n' ':')"
  "$J" -Xmx24g -cp "$CP" io.volpool.bench.GpuBench conf/models/fused_seed.safetensors --json "$OUT/gpu-bench.json" 2>&1 | tee "$OUT/gpu-bench.log"
  "$J" -Xmx8g -cp "$CP" io.volpool.bench.CpuBench conf/models/fused_seed.safetensors 1,16 2>&1 | tee "$OUT/cpu-bench.log"
  PYTHONUNBUFFERED=1 python3 .stage/torch_anchors.py --json "$OUT/torch-anchors.json" 2>&1 | tee "$OUT/torch-anchors.log"
fi
