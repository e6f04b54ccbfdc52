#!/usr/bin/env bash
# runlocal.sh NAME INPUT OUTDTYPE [PROFILE=0|1] [PIPELINE]
cd ${ROOT:-/work/main}
name=$1 in=$2 odt=$3 prof=${4:-0} pipe=${5:-avgpool3d}
opts="-Xmx6g"
if [ "$prof" = 1 ]; then rm -rf /tmp/lp/$name; mkdir -p /tmp/lp/$name; opts="$opts -agentpath:/work/main/.stage/prof/libasyncProfiler.so=start,event=wall,interval=5ms,threads,collapsed,loop=1s,file=/tmp/lp/$name/w-%n{999}.txt"; fi
rm -rf /dev/shm/o-local
VOLPOOL_JAVA_OPTS="$opts" VOLPOOL_CLASS_ARCHIVE=off scripts/volpool --master "local[2]" --conf spark.ui.enabled=false --conf spark.volpool.input=$in \
  --conf spark.volpool.output=/dev/shm/o-local --conf spark.volpool.pipeline=$pipe --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 \
  --conf spark.volpool.device=cpu --conf spark.volpool.fused.weights=conf/models/fused_seed.safetensors --conf spark.volpool.output.dtype=$odt > /tmp/lp/$name.log 2>&1
python3 - $name <<'PY'
import json,sys
d=json.load(open('/dev/shm/o-local/_volpool_summary.json')); t=d['timeline']
print(sys.argv[1], d['rows_in'], 'vol', d['wall_seconds'], 's; steady', t['steady_window_seconds'], t['steady_volumes_per_second'], 'vol/s;', {k: round(v,1) for k, v in d['phase_seconds_summed_over_tasks'].items() if v})
PY
