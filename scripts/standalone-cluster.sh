#!/usr/bin/env bash
# A Spark standalone cluster on this host from the build's Spark jars (job/target/lib, or /tmp/stage/lib
# on the GPU machine): one Master and N Workers, for tests and benchmarks. Every process it starts is
# recorded in DIR/pids and stopped by 'stop'.
#
#   scripts/standalone-cluster.sh start DIR MASTER_PORT WORKERS [CORES_PER_WORKER=1] [GPUS_PER_WORKER=0]
#   scripts/standalone-cluster.sh submit DIR MASTER_PORT [spark-submit args...]   (client mode, the -spark.jar)
#   scripts/standalone-cluster.sh submit-app DIR MASTER_PORT|local[N] CLASS APP_JAR [args...]  (--jars the -spark.jar)
#   scripts/standalone-cluster.sh stop DIR
#
# With GPUS_PER_WORKER=n, worker i offers GPUs i*n .. i*n+n-1 (spark.worker.resource.gpu.*, discovered by
# get-gpus-resources.sh); WORKER_MEMORY (default 4g) sets each worker's memory.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:?usage}; dir=${2:?usage}
java=${JAVA:-java}
[ -x /tmp/stage/jre/bin/java ] && [ -z "${JAVA:-}" ] && java=/tmp/stage/jre/bin/java
# workers start executors with $JAVA_HOME/bin/java (else `java` on PATH, which the GPU machine lacks):
# give them the Java this script runs
java_bin=$(readlink -f "$(command -v "$java")") || { echo "standalone-cluster.sh: no java at '$java'" >&2; exit 1; }
export JAVA_HOME=${java_bin%/bin/java}
lib=${SPARK_LIB:-$root/job/target/lib}
[ -d "$lib" ] || lib=/tmp/stage/lib
cp=$(ls "$lib"/*.jar | grep -v -e '/volpool-' -e '/jcuda' -e console-standalone -e assertj | tr '\n' ':')
. "$root/scripts/lib/java-opens.sh"
log4j="-Dlog4j2.configurationFile=$root/conf/log4j2-cluster.properties"
case "$cmd" in
  start)
    port=${3:?MASTER_PORT}; workers=${4:?WORKERS}; cores=${5:-1}; gpus=${6:-0}
    mkdir -p "$dir"
    # workers launch executors from SPARK_HOME/jars: a home of links to the Spark jars (a RELEASE file marks it built)
    mkdir -p "$dir/spark-home/jars"
    touch "$dir/spark-home/RELEASE"
    for j in $(echo "$cp" | tr ':' ' '); do ln -sf "$j" "$dir/spark-home/jars/"; done
    export SPARK_HOME="$dir/spark-home" SPARK_SCALA_VERSION=2.13
    # shellcheck disable=SC2086
    SPARK_LOCAL_IP=127.0.0.1 setsid "$java" -Xmx512m $JAVA_OPENS $log4j -cp "$cp" org.apache.spark.deploy.master.Master \
      --host 127.0.0.1 --port "$port" --webui-port 0 >"$dir/master.log" 2>&1 &
    echo $! >>"$dir/pids"
    for i in $(seq 0 $((workers - 1))); do
      extra=""
      indices=""
      if [ "$gpus" -gt 0 ]; then
        extra="-Dspark.worker.resource.gpu.amount=$gpus -Dspark.worker.resource.gpu.discoveryScript=$root/scripts/get-gpus-resources.sh"
        indices=$(seq -s, $((i * gpus)) $((i * gpus + gpus - 1)))
      fi
      mkdir -p "$dir/worker$i"
      # DISTINCT_HOSTS=1: worker i on 127.0.0.(i+2), a host of its own as Spark sees it (speculation never runs a
      # task's second attempt on the host of its first)
      host=127.0.0.1
      [ "${DISTINCT_HOSTS:-0}" = 1 ] && host=127.0.0.$((i + 2))
      # shellcheck disable=SC2086
      VOLPOOL_GPU_INDICES=$indices SPARK_LOCAL_IP=$host setsid "$java" -Xmx512m $JAVA_OPENS $log4j $extra -cp "$cp" \
        org.apache.spark.deploy.worker.Worker "spark://127.0.0.1:$port" --host "$host" --cores "$cores" \
        --memory "${WORKER_MEMORY:-4g}" --work-dir "$dir/worker$i" --webui-port 0 >"$dir/worker$i.log" 2>&1 &
      echo $! >>"$dir/pids"
    done
    # wait until every worker has registered with the master
    for _ in $(seq 1 120); do
      n=$(grep -c "Registering worker" "$dir/master.log" 2>/dev/null || true)
      [ "${n:-0}" -ge "$workers" ] && { echo "cluster up: master 127.0.0.1:$port, $workers worker(s)"; exit 0; }
      sleep 0.5
    done
    echo "standalone-cluster.sh: workers did not register in 60 s; see $dir/*.log" >&2
    exit 1
    ;;
  submit)
    port=${3:?MASTER_PORT}; shift 3
    jar=$(ls "$root"/job/target/volpool-job-*-spark.jar 2>/dev/null || ls /tmp/stage/lib/volpool-job-*-spark.jar)
    # shellcheck disable=SC2086
    SPARK_LOCAL_IP=127.0.0.1 "$java" -Xmx2g $JAVA_OPENS -Dlog4j2.configurationFile="$root/conf/log4j2.properties" -cp "$cp" org.apache.spark.deploy.SparkSubmit \
      --master "spark://127.0.0.1:$port" --deploy-mode client --class io.volpool.job.VolpoolMain \
      --conf spark.ui.enabled=false --conf spark.driver.host=127.0.0.1 \
      --conf "spark.executor.extraJavaOptions=$JAVA_OPENS" --conf "spark.driver.extraJavaOptions=$JAVA_OPENS" "$@" "$jar"
    ;;
  submit-app)
    # an application of one's own with the -spark.jar on its class path (--jars), as a user's Spark code runs
    # volpool's SQL functions: submit-app DIR MASTER_PORT|local[N] CLASS APP_JAR [app args...]
    port=${3:?MASTER_PORT}; class=${4:?CLASS}; app=${5:?APP_JAR}; shift 5
    master="spark://127.0.0.1:$port"
    case "$port" in local*) master=$port ;; esac
    jar=$(ls "$root"/job/target/volpool-job-*-spark.jar 2>/dev/null || ls /tmp/stage/lib/volpool-job-*-spark.jar)
    # shellcheck disable=SC2086
    SPARK_LOCAL_IP=127.0.0.1 "$java" -Xmx2g $JAVA_OPENS -Dlog4j2.configurationFile="$root/conf/log4j2.properties" -cp "$cp" org.apache.spark.deploy.SparkSubmit \
      --master "$master" --deploy-mode client --class "$class" --jars "$jar" \
      --conf spark.ui.enabled=false --conf spark.driver.host=127.0.0.1 \
      --conf "spark.executor.extraJavaOptions=$JAVA_OPENS" --conf "spark.driver.extraJavaOptions=$JAVA_OPENS" "$app" "$@"
    ;;
  stop)
    if [ -f "$dir/pids" ]; then
      while read -r p; do kill "$p" 2>/dev/null; done <"$dir/pids"
      sleep 1
      while read -r p; do kill -9 "$p" 2>/dev/null; done <"$dir/pids"
      # executors are children of the workers' process groups
      while read -r p; do kill -9 -- -"$p" 2>/dev/null; done <"$dir/pids"
      rm -f "$dir/pids"
    fi
    ;;
  *) echo "usage: standalone-cluster.sh start|submit|stop DIR ..." >&2; exit 2 ;;
esac
