#!/usr/bin/env bash
# On the GPU machine (which has nvcc but no Java toolchain): builds the kernels of this checkout with
# scripts/device/build-kernels.sh, copies the image and its build record to $OUT (to commit here), and puts
# them into every staged jar under /tmp/stage/lib that carries kernels/, so the tests and runs there use
# this checkout's kernels, child JVMs included. Run it after the last staged part is unpacked.
set -euo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
bash scripts/device/build-kernels.sh
K=udf/src/main/resources/kernels
cp "$K/volpool.fatbin" "$K/volpool.build.txt" "$OUT/"
python3 - "$K" /tmp/stage/lib/*.jar <<'PY'
import os, sys, zipfile
k = sys.argv[1]
for jar in sys.argv[2:]:
    with zipfile.ZipFile(jar) as z:
        if "kernels/volpool.fatbin" not in z.namelist():
            continue
        tmp = jar + ".tmp"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
            for i in z.infolist():
                base = i.filename.rsplit("/", 1)[-1]
                if i.filename.startswith("kernels/") and base in ("volpool.fatbin", "volpool.build.txt", "volpool.cu"):
                    out.write(os.path.join(k, base), i.filename)
                else:
                    out.writestr(i, z.read(i.filename))
    os.replace(tmp, jar)
    print("kernels of this checkout put into", os.path.basename(jar))
PY
