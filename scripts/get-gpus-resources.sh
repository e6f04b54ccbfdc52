#!/usr/bin/env bash
# Spark GPU discovery script: prints this host's NVIDIA GPUs as Spark's ResourceInformation JSON,
# e.g. {"name": "gpu", "addresses": ["0","1"]}. Ship it to executors (spark-submit --files).
ADDRS=$(nvidia-smi --query-gpu=index --format=csv,noheader | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n/","/g')
echo "{\"name\": \"gpu\", \"addresses\": [\"$ADDRS\"]}"
