#!/usr/bin/env bash
# Builds udf/src/main/resources/kernels/*.cu into a .fatbin beside each (sm_90 machine code for
# Hopper, plus compute_75 PTX that the driver compiles for any other GPU from Turing on), and
# records the exact nvcc command, nvcc's version and the source's SHA-256 in NAME.build.txt.
# KernelBuildTest fails when a .cu no longer matches its recorded hash: rerun this script and
# commit both files. Needs nvcc 13 (the CUDA 13 toolkit); the GPU itself is not needed.
set -euo pipefail
cd "$(dirname "$0")/../../udf/src/main/resources/kernels"
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || { echo "build-kernels: nvcc not found; install the CUDA 13 toolkit or set NVCC" >&2; exit 1; }
for cu in *.cu; do
  name=${cu%.cu}
  cmd=("$NVCC" -fatbin -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75 -o "$name.fatbin" "$cu")
  "${cmd[@]}"
  {
    echo "source: $cu"
    echo "source_sha256: $(sha256sum "$cu" | cut -d' ' -f1)"
    echo "fatbin_sha256: $(sha256sum "$name.fatbin" | cut -d' ' -f1)"
    echo "nvcc: $("$NVCC" --version | tail -1)"
    echo "command: nvcc ${cmd[*]:1}"
  } > "$name.build.txt"
  echo "built $name.fatbin ($(stat -c %s "$name.fatbin") bytes)"
done
