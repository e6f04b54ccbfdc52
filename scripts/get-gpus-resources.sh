#!/usr/bin/env bash
# Spark GPU discovery script: prints this host's NVIDIA GPUs as Spark's ResourceInformation JSON,
# e.g. {"name": "gpu", "addresses": ["0","1"]}. Ship it to executors (spark-submit --files) or name it
# in the worker's SPARK_WORKER_OPTS (spark.worker.resource.gpu.discoveryScript).
# Fails (exit 1, a message on stderr) when it finds no GPU, so Spark refuses the executor or worker
# instead of offering a GPU with an empty address. VOLPOOL_GPU_INDICES=0,1 restricts the GPUs offered
# (several workers on one host, one GPU each).
set -uo pipefail
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "get-gpus-resources.sh: nvidia-smi not found: this host has no NVIDIA driver, so it offers no GPU" >&2
  exit 1
fi
if ! idx=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>&1); then
  echo "get-gpus-resources.sh: nvidia-smi failed: $idx" >&2
  exit 1
fi
idx=$(echo "$idx" | tr -d ' ' | grep -E '^[0-9]+$' || true)
if [ -n "${VOLPOOL_GPU_INDICES:-}" ]; then
  idx=$(echo "$idx" | grep -xF -f <(echo "$VOLPOOL_GPU_INDICES" | tr ',' '\n') || true)
fi
if [ -z "$idx" ]; then
  echo "get-gpus-resources.sh: nvidia-smi lists no GPU${VOLPOOL_GPU_INDICES:+ among VOLPOOL_GPU_INDICES=$VOLPOOL_GPU_INDICES}" >&2
  exit 1
fi
echo "{\"name\": \"gpu\", \"addresses\": [$(echo "$idx" | sed 's/.*/"&"/' | paste -sd, -)]}"
