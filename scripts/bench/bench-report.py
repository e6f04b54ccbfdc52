#!/usr/bin/env python3
"""Turns one device run's files (gpu-bench.json, torch-anchors.json, cpu-bench.log) into the
markdown table of docs/benchmarks.md: volpool beside PyTorch and the bandwidth floor, all measured
in the same call. Usage: scripts/bench/bench-report.py RUN_DIR"""
import json
import os
import re
import sys

d = sys.argv[1]
ours = json.load(open(os.path.join(d, "gpu-bench.json")))
torch = json.load(open(os.path.join(d, "torch-anchors.json")))
cpu = {}
for line in open(os.path.join(d, "cpu-bench.log")):
    m = re.match(r"(\w+): ([0-9.e+]+)", line)
    if m:
        cpu[m.group(1)] = float(m.group(2))

rows = [
    ("fused, batch 128 `[3,16,32,32]` (ms)", ours["fused_ms"], torch["fused_eager_fp32_ms"], ours["fused_floor_ms"], 1.3),
    ("fused then avgpool3d, batch 128, one kernel (ms)", ours["pipeline_ms"], torch["pipeline_eager_fp32_ms"],
     ours["pipeline_floor_ms"], 2.0),
    ("avgpool3d `[16,32,128,128,256]` (ms)", ours["avgpool_ms"], torch["avgpool_eager_ms"], ours["avgpool_floor_ms"], 1.15),
]
print("| figure | volpool | PyTorch (fp32 eager) | floor | volpool / floor | target | PyTorch / volpool |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, v, t, f, target in rows:
    print(f"| {name} | {v:.4f} | {t:.3f} | {f:.4f} | {v / f:.2f}x | {target}x | {t / v:.0f}x |")
print(f"| fused, PyTorch TF32 eager / compiled (ms) | | {torch['fused_eager_tf32_ms']:.3f} / {torch['fused_compiled_ms']:.3f} | | | | |")
hp = ours["host_pipeline_pinned_volumes_per_s"]
print(f"| host→device→host, fused then avgpool3d, pinned, from Java (volumes/s) | {hp:,.0f} | "
      f"{torch['host_pipeline_pinned_volumes_per_s']:,.0f} | | | ≥150,000 | {hp / torch['host_pipeline_pinned_volumes_per_s']:.0f}x (ours faster) |")
hh = ours["host_pipeline_java_heap_volumes_per_s"]
print(f"| same, copying each batch from a Java byte[] first (volumes/s) | {hh:,.0f} | | | | | |")
for t in (1, 16):
    k = f"cpu_pipeline_volumes_per_s_{t}threads"
    if k in cpu and k in torch:
        print(f"| CPU fused then avgpool3d, {t} thread(s) (volumes/s) | {cpu[k]:.1f} | {torch[k]:.1f} | | | ≥2x PyTorch | "
              f"{cpu[k] / torch[k]:.1f}x (ours faster) |")
print(f"\ndevice-to-device copy: volpool {ours['d2d_copy_GBps']:.0f} GB/s, PyTorch {torch['d2d_copy_GBps']:.0f} GB/s "
      f"(read + write); floors use volpool's figure.")
