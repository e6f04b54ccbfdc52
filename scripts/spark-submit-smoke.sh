#!/usr/bin/env bash
# Runs the spark-submit jar (job/target/volpool-job-*-spark.jar) the way a cluster does: through
# Spark's own SparkSubmit, with Spark, Scala and Hadoop from a Spark classpath and volpool + JCuda
# only from the submitted jar. Here the Spark classpath is job/target/lib less volpool and JCuda.
# Usage: scripts/spark-submit-smoke.sh OUTPUT_DIR  (reads the golden pipeline_seed case)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: spark-submit-smoke.sh OUTPUT_DIR}
jar=$(ls "$root"/job/target/volpool-job-*-spark.jar)
cp=$(ls "$root"/job/target/lib/*.jar | grep -v -e '/volpool-' -e '/jcuda' | tr '\n' ':')
. "$(dirname "$0")/lib/java-opens.sh"
opens=$JAVA_OPENS
golden="$root/../shared/golden/pipeline_seed"
# shellcheck disable=SC2086
java -Xmx4g $opens -Dlog4j2.configurationFile="$root/conf/log4j2.properties" -cp "$cp" org.apache.spark.deploy.SparkSubmit \
  --class io.volpool.job.VolpoolMain --master 'local[2]' \
  --conf spark.volpool.input="$golden/volumes_binary.parquet" --conf spark.volpool.output="$out" \
  --conf spark.volpool.pipeline=fused,avgpool3d --conf spark.volpool.fused.weights="$golden/model.safetensors" \
  --conf spark.volpool.output.mode=overwrite \
  --conf spark.volpool.avgpool3d.kernelSize=3 --conf spark.volpool.avgpool3d.stride=2 --conf spark.volpool.avgpool3d.padding=1 \
  --conf spark.volpool.device=cpu --conf spark.ui.enabled=false \
  "$jar"
