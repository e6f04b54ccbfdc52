#!/usr/bin/env bash
# Slabs along D (issue 9) on the CPU backend, with the build of this checkout and scripts/volpool:
#  1. N reference volumes [32,128,128,256] (512 MiB each) through avgpool3d whole (default budget) and
#     in slabs (a budget of one eighth of a volume, 64 MiB: each volume is spilled and run in slabs);
#     the two outputs must be byte-identical.
#  2. One volume of 2.25 GiB [9,1024,256,256] stored across rows (pyarrow, examples/volumes_across_rows.py)
#     through avgpool3d from rows to rows under a 256 MiB budget.
# Usage: scripts/bench/bench-slabs.sh [WORKDIR] (default /tmp/volpool-bench-slabs); env N (default 4), MASTER
# (default local[*]), VOLPOOL_JAVA_OPTS (default -Xmx8g). Needs python3 with numpy and pyarrow.
# Prints one line per run: wall seconds, GB/s in, and the phase times from the run summary.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/volpool-bench-slabs}
n=${N:-4}
master=${MASTER:-local[*]}
mkdir -p "$work"
report() {
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[2] + "/_volpool_summary.json"))
ph = {k: v for k, v in d["phase_seconds_summed_over_tasks"].items() if v}
print(f"{sys.argv[1]:28s} {d['rows_in']:4d} rows in {d['wall_seconds']:7.2f} s  {d['gb_per_second_in']:.3f} GB/s in"
      f"  slabbed {d['volumes_in_slabs']}  peak budget {d['peak_budget_bytes'] >> 20} MiB  {ph}")
PY
}
run() {
  local name=$1 out=$2; shift 2
  rm -rf "$out"
  "$root/scripts/volpool" --master "$master" --conf spark.ui.enabled=false --conf spark.volpool.device=cpu \
    --conf spark.volpool.output="$out" "$@" > "$work/$name.log" 2>&1 || { tail -5 "$work/$name.log"; exit 1; }
  report "$name" "$out"
}
if [ ! -d "$work/ref-rows" ]; then
  python3 - "$work/ref-npy" "$n" <<'PY'
import numpy as np, os, sys
os.makedirs(sys.argv[1], exist_ok=True)
rng = np.random.default_rng(9)
for i in range(int(sys.argv[2])):
    np.save(f"{sys.argv[1]}/vol{i:02d}.npy", rng.standard_normal((32, 128, 128, 256), dtype=np.float32))
PY
  run to-parquet "$work/ref-rows" --conf spark.volpool.input="$work/ref-npy" --conf spark.volpool.input.format=npy \
    --conf spark.volpool.output.format=parquet --conf spark.volpool.pipeline=identity
fi
run avgpool-whole "$work/out-whole" --conf spark.volpool.input="$work/ref-rows" --conf spark.volpool.pipeline=avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1
run avgpool-slabs-64m "$work/out-slabs" --conf spark.volpool.input="$work/ref-rows" --conf spark.volpool.pipeline=avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 \
  --conf spark.volpool.memory.budget=64m
python3 "$root/scripts/bench/output-checksum.py" "$work/out-whole" > "$work/whole.sum"
python3 "$root/scripts/bench/output-checksum.py" "$work/out-slabs" > "$work/slabs.sum"
cmp "$work/whole.sum" "$work/slabs.sum" && echo "outputs identical: $(head -c 80 "$work/whole.sum")"
if [ ! -d "$work/big-rows" ]; then
  python3 "$root/examples/volumes_across_rows.py" write "$work/big-rows" 9 1024 256 256 16 > "$work/big.digest"
fi
run big-across-rows-256m "$work/out-big" --conf spark.volpool.input="$work/big-rows" --conf spark.volpool.pipeline=avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 \
  --conf spark.volpool.memory.budget=256m --conf spark.volpool.output.rowBytes=64m
