#!/usr/bin/env bash
# Runs volpool.cu's kernels on the CPU (cuda_emu.h) against the kernels of a trusted commit (default
# HEAD; BASE=REV picks another): the new code must give the old kernels' outputs bit for bit where
# the arithmetic is the same (the one-read pools on stored values against widen + the float32 pool,
# fused then maxpool3d in one kernel against fused then maxpool3d in two), and within the golden
# tolerance where only the order of a sum changed. Needs g++ with C++20; no GPU, no CUDA.
#   scripts/emu/run.sh            # about a minute on 2 cores
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cu=udf/src/main/resources/kernels/volpool.cu
work=${EMU_WORK:-$root/target/emu}
mkdir -p "$work"
prep() {  # prep NAMESPACE < volpool.cu > NAME.inc
  echo "namespace $1 {"
  sed -e '/#include/d' -e 's/extern "C" //' \
      -e 's/extern __shared__ \(\w*\) \(\w*\)\[\];/\1* \2 = reinterpret_cast<\1*>(EMU_DYNAMIC_SMEM);/'
  echo "}"
}
prep cur < "$root/$cu" > "$work/cur.inc"
(cd "$root" && git show "${BASE:-HEAD}:$cu") | prep old > "$work/old.inc"
g++ ${EMU_FLAGS:-} -std=c++20 -O2 -ffp-contract=off -pthread -Wno-unknown-pragmas -I"$here" -I"$work" -o "$work/emu" "$here/kernels_emu.cpp"
"$work/emu" "$@"
