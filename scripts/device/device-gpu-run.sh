#!/usr/bin/env bash
# Runs on the GPU machine (see docs/gpu-testing.md), after the staged parts are unpacked into
# /tmp/stage. Modes: tests (udf GPU tests), jobtests (the job's tests with device=gpu), bench (GPU
# and CPU benchmarks beside PyTorch's anchors), e2e (the whole job on 8192 sample volumes, GPU and
# CPU), datapath (the host loop, then scripts/bench/bench-datapath.sh: the job beside Spark's own copy and
# the bare page reader on /dev/shm), multigpu (scripts/bench/bench-multigpu.sh: one GPU against two, as two
# standalone workers and as one executor), maxpool (maxpool3d's kernels beside PyTorch's), kernels (issue 32's
# pools on stored dtypes and fused then maxpool3d in one kernel, with kernel variants, beside PyTorch's), profile
# (Nsight Compute on the fast kernels), warm (a 1,024-volume job as a process, without and with the
# pinned pool; WARM_RUNS="SETUP:POOL[:old] ..." picks the set-ups, SETUP none or archive; WARM_AB=DIR names the
# volpool jars of another commit that :old runs), all (tests + bench). Logs go to $OUT.
set -uo pipefail
what=${1:-all}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=/tmp/stage/jre/bin/java
LIB=/tmp/stage/lib
GOLDEN=${GOLDEN:-.stage/golden}
. "$(dirname "$0")/../lib/java-opens.sh"
OPENS=$JAVA_OPENS
CPALL="$(ls "$LIB"/*.jar | grep -v console-standalone | tr '\n' ':')"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nproc; date -u; } | tee "$OUT/machine.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
  "$J" -Xmx8g -Dvolpool.golden="$GOLDEN" -Dvolpool.golden.project="${PROJECT_GOLDEN:-udf/src/test/resources/golden}" -jar "$LIB"/junit-platform-console-standalone-*.jar execute \
    --class-path "$(ls "$LIB"/*.jar | grep -v console-standalone | tr '\n' ':')" \
    ${UDF_TEST_CLASSES:---scan-class-path $(ls "$LIB"/volpool-udf-*-tests.jar)} --details=summary --disable-banner \
    --reports-dir "${JUNIT_REPORTS:-/tmp/junit}" 2>&1 | tee "$OUT/gpu-tests.log" | grep -vE '^\s+at ' | tail -60
fi
if [ "$what" = jobtests ]; then
  # the launcher on the class path itself (not -jar), so tests that start a child JVM can pass java.class.path on;
  # in job/, as Maven runs them (tests name ../conf, ../airflow: from the repository's root they missed, 2026-12-06)
  abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
  golden=$(abs "$GOLDEN"); project=$(abs "${PROJECT_GOLDEN:-udf/src/test/resources/golden}")
  (cd job && "$J" -Xmx10g $OPENS -Dvolpool.golden="$golden" -Dvolpool.golden.project="$project" -Dvolpool.test.device=gpu -Dvolpool.cuda.widenOnDevice=${WIDEN_ON_DEVICE:-true} -Dvolpool.test.opens="$OPENS" \
    -cp "$CPALL$(ls "$LIB"/junit-platform-console-standalone-*.jar)" org.junit.platform.console.ConsoleLauncher \
    execute ${JOB_TEST_CLASSES:---scan-class-path $(ls "$LIB"/volpool-job-*-tests.jar)} --details=summary \
    --disable-banner --reports-dir "${JUNIT_REPORTS:-/tmp/junit-job}" 2>&1) | tee "$OUT/gpu-job-tests.log" | grep -vE '^\s+at ' | tail -40
fi
if [ "$what" = datapath ]; then
  "$J" -Xmx24g -cp "$CPALL" io.volpool.bench.GpuBench conf/models/fused_seed.safetensors --only host 2>&1 | tee "$OUT/gpu-bench.log"
  bash scripts/bench/bench-datapath.sh
fi
if [ "$what" = multigpu ]; then
  bash scripts/bench/bench-multigpu.sh
fi
if [ "$what" = warm ]; then
  # the fixed cost (issue 15): a 1,024-volume job as a whole process, three rounds alternating: no class
  # archive, the class archive (scripts/lib/class-archive.sh, made here for this runtime and class path by
  # a training run on the GPU), and the archive with the pinned pool that the warm-up allocates while the
  # job plans
  . "$(dirname "$0")/../lib/class-archive.sh"
  ARCH=/tmp/volpool-classes.jsa
  # a second warm in the same machine (other jars, say) starts from nothing: the training run refuses an existing output
  rm -rf /dev/shm/train-vols /dev/shm/train-out /dev/shm/warm-vols /dev/shm/warm-out "$ARCH" "$ARCH".*
  "$J" -Xmx16g $OPENS -Dlog4j2.configurationFile=conf/log4j2.properties -cp "$CPALL" io.volpool.job.SampleData /dev/shm/warm-vols 1024 16 2>&1 | tail -1
  "$J" -Xmx4g $OPENS -cp "$CPALL" io.volpool.job.SampleData /dev/shm/train-vols 64 2 >/dev/null 2>&1
  t0=$(date +%s.%N)
  volpool_make_archive "$J" "$CPALL" "$ARCH" "-Xmx48g $OPENS -Dlog4j2.configurationFile=conf/log4j2.properties" -- \
    --master 'local[16]' --conf spark.ui.enabled=false --conf spark.volpool.input=/dev/shm/train-vols \
    --conf spark.volpool.output=/dev/shm/train-out --conf spark.volpool.device=gpu --conf spark.volpool.pipeline=fused,avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 \
    --conf spark.volpool.fused.weights=conf/models/fused_seed.safetensors
  echo "== class archive: rc=$? $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s, $(du -m $ARCH | cut -f1) MiB" | tee -a "$OUT/warm.log"
  tail -3 "$ARCH.log" >> "$OUT/warm.log"
  if [ -n "${WARM_AB:-}" ]; then
    # WARM_AB=DIR: volpool's own jars of another commit in DIR; a run spec ending in :old runs them (with their own
    # archive) in place of this commit's, so two commits alternate in one call
    CPOLD="$(ls "$LIB"/*.jar | grep -v console-standalone | grep -v '/volpool-' | tr '\n' ':')$(ls "$WARM_AB"/volpool-*.jar | tr '\n' ':')"
    rm -rf /dev/shm/train-out
    volpool_make_archive "$J" "$CPOLD" "$ARCH.old" "-Xmx48g $OPENS -Dlog4j2.configurationFile=conf/log4j2.properties" -- \
      --master 'local[16]' --conf spark.ui.enabled=false --conf spark.volpool.input=/dev/shm/train-vols \
      --conf spark.volpool.output=/dev/shm/train-out --conf spark.volpool.device=gpu --conf spark.volpool.pipeline=fused,avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 \
      --conf spark.volpool.fused.weights=conf/models/fused_seed.safetensors
    echo "== class archive of $WARM_AB: rc=$?" | tee -a "$OUT/warm.log"
  fi
  # the 1,024-volume job: warm_job JVM_FLAGS PINNED_POOL [CLASS_PATH], its log in /tmp/warm.log
  warm_job() {
    # shellcheck disable=SC2086
    "$J" -Xmx48g $1 $OPENS -Dlog4j2.configurationFile=conf/log4j2.properties -cp "${3:-$CPALL}" io.volpool.job.VolpoolMain \
      --master 'local[16]' --conf spark.volpool.input=/dev/shm/warm-vols --conf spark.volpool.output=/dev/shm/warm-out \
      --conf spark.volpool.device=gpu --conf spark.volpool.pipeline=fused,avgpool3d --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 --conf spark.volpool.output.mode=overwrite \
      --conf spark.volpool.fused.weights=conf/models/fused_seed.safetensors --conf spark.ui.enabled=false \
      --conf spark.volpool.gpu.pinnedPool.size=$2 > /tmp/warm.log 2>&1
  }
  for i in 1 2 3; do
    for run in ${WARM_RUNS:-none:0 archive:0 archive:2g}; do
      cp=$CPALL; arch=$ARCH
      case $run in *:old) cp=$CPOLD; arch=$ARCH.old; run=${run%:old} ;; esac
      share=""; [ "${run%%:*}" = archive ] && share="-XX:SharedArchiveFile=$arch -Xshare:on"
      pool=${run#*:}
      t0=$(date +%s.%N)
      warm_job "$share" "$pool" "$cp"
      rc=$?; t1=$(date +%s.%N)
      { echo "== round $i ${run%%:*} pinnedPool.size=$pool$([ "$cp" = "$CPALL" ] || echo ' (old jars)') rc=$rc process $(python3 -c "print(round($t1-$t0,2))") s"
        python3 -c "import json; d=json.load(open('/dev/shm/warm-out/_volpool_summary.json')); print('   wall', d['wall_seconds'], 'timeline', d.get('timeline'))" 2>&1
        grep -E "warm-up|allocat|wait for budget|volumes  " /tmp/warm.log; } | tee -a "$OUT/warm.log"
      cat /tmp/warm.log >> "$OUT/warm-full.log"
    done
  done
  if [ -n "${PROFILER:-}" ]; then
    # one more run with the archive under async-profiler's wall clock (every thread, 1 ms): the collapsed stacks
    # go to $OUT/wall-1024.txt, the task threads' summary (scripts/bench/wall-profile.py) to the end of warm.log
    if [ -n "${PROFILER_JFR:-}" ]; then
      # PROFILER_JFR=N: N runs recorded in JFR instead, with timestamps, for scripts/bench/wall-timeline.py (run it
      # where the JDK's jfr tool is: jfr print --events profiler.WallClockSample --json FILE)
      for k in $(seq "$PROFILER_JFR"); do
        warm_job "-XX:SharedArchiveFile=$ARCH -Xshare:on -agentpath:$PROFILER=start,event=wall,interval=1ms,jfr,file=$OUT/wall-1024-$k.jfr" 0
        { echo "== profiled run $k (JFR) rc=$?"; grep -E "timeline|wall time|warm-up done|volpool: /" /tmp/warm.log; } | tee -a "$OUT/warm.log"
      done
    else
      warm_job "-XX:SharedArchiveFile=$ARCH -Xshare:on -agentpath:$PROFILER=start,event=wall,interval=1ms,threads,collapsed,file=$OUT/wall-1024.txt" 0
      { echo "== profiled run rc=$?"; grep -E "timeline|wall time" /tmp/warm.log; python3 scripts/bench/wall-profile.py "$OUT/wall-1024.txt" 1 2>&1 | head -50; } \
        | tee -a "$OUT/warm.log"
    fi
  fi
fi
if [ "$what" = e2e ]; then
  "$J" -Xmx16g $OPENS -Dlog4j2.configurationFile=conf/log4j2.properties -cp "$CPALL" io.volpool.job.SampleData /tmp/vols "${E2E_VOLUMES:-8192}" "${E2E_FILES:-16}" 2>&1 | tail -2
  for run in ${E2E_RUNS:-gpu:fused,avgpool3d cpu:fused,avgpool3d gpu:identity}; do
    dev=${run%%:*}; pipe=${run#*:}
    "$J" -Xmx48g $OPENS -Dlog4j2.configurationFile=conf/log4j2.properties -cp "$CPALL" io.volpool.job.VolpoolMain \
      --master 'local[16]' --conf spark.volpool.input=/tmp/vols --conf spark.volpool.output=/tmp/out-$dev \
      --conf spark.volpool.device=$dev --conf spark.volpool.pipeline=$pipe --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 --conf spark.volpool.output.mode=overwrite \
      --conf spark.volpool.fused.weights=conf/models/fused_seed.safetensors --conf spark.ui.enabled=false \
      --conf spark.sql.files.maxPartitionBytes=134217728 2>&1 | tee -a "$OUT/e2e.log" | grep -E "summary|backend|pipeline  |volumes  |wall|throughput|FAILED|WARN"
  done
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  CP="$(ls "$LIB"/*.jar | grep -v console-standalone | tr '\n' ':')"
  "$J" -Xmx24g -cp "$CP" io.volpool.bench.GpuBench conf/models/fused_seed.safetensors --json "$OUT/gpu-bench.json" 2>&1 | tee "$OUT/gpu-bench.log"
  for v in ${VARIANTS:-}; do  # kernel variants under .stage/variants, fused and pipeline only
    echo "== variant $v"; "$J" -Xmx8g -Dvolpool.fatbin=".stage/variants/$v.fatbin" -cp "$CP" io.volpool.bench.GpuBench \
      conf/models/fused_seed.safetensors --only fused,pipeline 2>&1 | grep -E "_ms|check" | tee -a "$OUT/gpu-bench.log"
  done
  [ -n "${SKIP_TORCH:-}" ] || "$J" -Xmx8g -cp "$CP" io.volpool.bench.CpuBench conf/models/fused_seed.safetensors 1,16 2>&1 | tee "$OUT/cpu-bench.log"
  [ -n "${SKIP_TORCH:-}" ] || PYTHONUNBUFFERED=1 python3 bench/anchors/torch_anchors.py --json "$OUT/torch-anchors.json" 2>&1 | tee "$OUT/torch-anchors.log"
fi
if [ "$what" = maxpool ]; then
  # maxpool3d's kernels beside PyTorch's max_pool3d, in one call (docs/benchmarks.md "MaxPool3d")
  CP="$(ls "$LIB"/*.jar | grep -v console-standalone | tr '\n' ':')"
  "$J" -Xmx24g -cp "$CP" io.volpool.bench.GpuBench conf/models/fused_seed.safetensors --only copy,maxpool,fused_maxpool,avgpool \
    --json "$OUT/gpu-bench-maxpool.json" 2>&1 | tee "$OUT/gpu-bench-maxpool.log"
  PYTHONUNBUFFERED=1 python3 scripts/bench/torch-maxpool-anchor.py --anchors bench/anchors/torch_anchors.py \
    --json "$OUT/torch-maxpool.json" 2>&1 | tee "$OUT/torch-maxpool.log"
fi
if [ "$what" = kernels ]; then
  # issue 32, item 5: the pools on float32, int16, float16 and uint8 values, fused then maxpool3d in one kernel and in
  # two, beside PyTorch's eager and compiled ops on the same dtypes, in one call; KERNEL_VARIANTS="NAME ..." times the
  # pools again with .stage/variants/NAME.fatbin (-Dvolpool.fatbin: variants of the same kernels, built here)
  CP="$(ls "$LIB"/*.jar | grep -v console-standalone | tr '\n' ':')"
  "$J" -Xmx24g -cp "$CP" io.volpool.bench.GpuBench conf/models/fused_seed.safetensors \
    --only copy,avgpool,maxpool,pipeline,fused_maxpool,dtypes --json "$OUT/gpu-kernels.json" 2>&1 | tee "$OUT/gpu-kernels.log"
  for v in ${KERNEL_VARIANTS:-}; do
    echo "== variant $v" | tee -a "$OUT/gpu-kernels.log"
    "$J" -Xmx24g -Dvolpool.fatbin=".stage/variants/$v.fatbin" -cp "$CP" io.volpool.bench.GpuBench \
      conf/models/fused_seed.safetensors --only copy,avgpool,maxpool,fused_maxpool,dtypes 2>&1 \
      | grep -E "_ms|_x_floor|check" | sed "s/^/$v /" | tee -a "$OUT/gpu-kernels.log"
  done
  PYTHONUNBUFFERED=1 python3 bench/anchors/torch_dtype_anchors.py --json "$OUT/torch-dtypes.json" 2>&1 \
    | tee "$OUT/torch-dtypes.log"
  PYTHONUNBUFFERED=1 python3 scripts/bench/torch-maxpool-anchor.py --anchors bench/anchors/torch_anchors.py \
    --json "$OUT/torch-maxpool.json" 2>&1 | tee "$OUT/torch-maxpool.log"
fi
if [ "$what" = profile ]; then
  # one launch of each fast kernel under Nsight Compute (clocks left alone), for the numbers behind docs/benchmarks.md
  CP="$(ls "$LIB"/*.jar | grep -v console-standalone | tr '\n' ':')"
  for k in fused:fused_taps2_c3_c16 pipeline:pipeline_taps2_c3_c16 avgpool:avgpool_k3s2p1; do
    ncu --clock-control none -k "${k#*:}" --launch-count 1 --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats \
      "$J" -Xmx24g -cp "$CP" io.volpool.bench.GpuBench conf/models/fused_seed.safetensors --only "${k%%:*}" \
      > "/tmp/ncu-${k%%:*}.txt" 2>&1; cat "/tmp/ncu-${k%%:*}.txt" >> "$OUT/ncu.txt"
    grep -E "Duration|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Executed Ipc|Issue Slots Busy|L2 Hit|Block Limit (Reg|Shared)" "/tmp/ncu-${k%%:*}.txt" | head -12
  done
  unzip -o -q "$(ls "$LIB"/volpool-udf-*SNAPSHOT.jar)" kernels/volpool.fatbin -d /tmp/k
  for f in fused_taps2_c3_c16 pipeline_taps2_c3_c16 avgpool_k3s2p1; do
    cuobjdump -sass -fun "$f" /tmp/k/kernels/volpool.fatbin > "/tmp/sass-$f.txt" 2>&1; cat "/tmp/sass-$f.txt" >> "$OUT/sass.txt"
    echo "== $f: $(grep -cE '^\s+/\*[0-9a-f]+\*/' "/tmp/sass-$f.txt") instructions; top opcodes:"
    grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T] )?[A-Z0-9.]+' "/tmp/sass-$f.txt" | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -8 | tr '\n' ' '; echo
  done
fi
