"""Airflow DAG: runs the volpool Spark job nightly through spark-submit on a GPU cluster.

Needs the apache-airflow-providers-apache-spark package and a `spark_default` connection to the
cluster. The job's exit code tells Airflow what failed: 2 invalid settings, 3 a bad input record
(named in the task log), 1 anything else; the run summary is `<output>/_volpool_summary.json`.
"""
from datetime import datetime, timedelta

from airflow import DAG
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

JAR = "/opt/volpool/volpool-job-0.1.0-SNAPSHOT-spark.jar"

with DAG(
    dag_id="volpool_nightly",
    start_date=datetime(2026, 11, 1),
    schedule="@daily",
    catchup=False,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=10)},
    tags=["volpool", "gpu"],
) as dag:
    SparkSubmitOperator(
        task_id="pool_volumes",
        application=JAR,
        java_class="io.volpool.job.VolpoolMain",
        files="/opt/volpool/get-gpus-resources.sh",
        properties_file="/opt/volpool/spark-gpu.properties",
        conf={
            "spark.volpool.input": "hdfs:///volumes/{{ ds }}",
            "spark.volpool.output": "hdfs:///pooled/{{ ds }}",
            "spark.volpool.fused.weights": "hdfs:///models/fused.safetensors",
            # a rerun of the same day replaces that day's output
            "spark.volpool.mode": "overwrite",
        },
    )
