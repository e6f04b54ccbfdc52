"""Airflow DAG: the volpool Spark job, daily, through spark-submit on a GPU cluster.

What it does, and why:
- waits for the day's input to be complete (its `_SUCCESS` marker) before submitting;
- submits with `conf=` (merged over the cluster's spark-defaults.conf, which `properties_file` would replace)
  and a name per day, so the Spark UI and the history server show which day ran;
- writes each day to its own output with `mode=overwrite`, so a retry or a rerun of a day is idempotent;
- reads the run's status file, `.<output name>.volpool-status.json` beside the output, after spark-submit
  returns: in cluster deploy mode spark-submit's exit code does not say whether the driver failed;
- does not retry deterministic failures: exit 2 (invalid settings), 3 (bad input) and 4 (the environment:
  device=gpu without a usable GPU) fail the task at once with volpool's message; exit 1 (anything else: a
  lost executor, a full disk) is retried.

Needs apache-airflow-providers-apache-spark, a `spark_default` connection to the cluster, and pyarrow on the
workers to read the status file and the input marker from HDFS or S3 (local paths need nothing).
"""
import json
import posixpath
from datetime import datetime, timedelta

from airflow import DAG
from airflow.exceptions import AirflowException, AirflowFailException
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sensors.python import PythonSensor

JAR = "/opt/volpool/volpool-job-0.1.0-SNAPSHOT-spark.jar"
INPUT = "hdfs:///volumes/{{ ds }}"
OUTPUT = "hdfs:///pooled/{{ ds }}"
DETERMINISTIC = {2: "invalid settings", 3: "bad input", 4: "no usable GPU"}

GPU_CLUSTER_CONF = {
    # one GPU per executor, shared by its 8 task slots: a task holds the GPU only for its batches' copies and kernels
    "spark.executor.resource.gpu.amount": "1",
    "spark.executor.resource.gpu.discoveryScript": "./get-gpus-resources.sh",
    "spark.executor.cores": "8",
    "spark.task.resource.gpu.amount": "0.125",
    "spark.executor.memory": "24g",
    # pinned staging and output buffers live off the heap: leave room for the memory budget
    "spark.executor.memoryOverhead": "8g",
    "spark.volpool.device": "gpu",
    "spark.volpool.pipeline": "fused,avgpool3d",
    "spark.volpool.fused.weights": "hdfs:///models/fused.safetensors",
}


def _open(path):
    """A file on HDFS, S3 or the local disk, as text; None when it does not exist."""
    try:
        from pyarrow import fs
        filesystem, p = fs.FileSystem.from_uri(path)
        if filesystem.get_file_info(p).type == fs.FileType.NotFound:
            return None
        with filesystem.open_input_stream(p) as f:
            return f.read().decode("utf-8")
    except ImportError:
        local = path[len("file://"):] if path.startswith("file://") else path
        try:
            with open(local, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None


def status_path(output):
    """Where volpool writes the status of a run writing `output`."""
    parent, name = posixpath.split(output.rstrip("/"))
    return posixpath.join(parent, "." + name + ".volpool-status.json")


def input_ready(path):
    return _open(posixpath.join(path, "_SUCCESS")) is not None


class VolpoolSubmitOperator(SparkSubmitOperator):
    """spark-submit of the volpool job, judged by the run's status file rather than by spark-submit's exit code."""

    template_fields = (*SparkSubmitOperator.template_fields, "output")

    def __init__(self, *, output, **kwargs):
        super().__init__(**kwargs)
        self.output = output

    def execute(self, context):
        started = context["ti"].start_date
        failure = None
        try:
            super().execute(context)
        except AirflowException as e:
            failure = e
        text = _open(status_path(self.output))
        status = json.loads(text) if text else None
        if status is not None and started is not None and status.get("finished_at", "") < started.isoformat():
            status = None  # left by an earlier attempt: this one never got that far
        if status is None:
            raise AirflowException(
                f"volpool wrote no status beside {self.output} for this attempt: the driver did not finish;"
                f" see the spark-submit log above") from failure
        code = status["exit_code"]
        if code in DETERMINISTIC:
            raise AirflowFailException(
                f"volpool failed with {DETERMINISTIC[code]} (exit {code}), not retried: {status['message']}")
        if code != 0:
            raise AirflowException(f"volpool failed (exit {code}), will be retried: {status['message']}")
        self.log.info("volpool %s", status["message"])
        return status


with DAG(
    dag_id="volpool_daily",
    start_date=datetime(2026, 11, 1),
    schedule="@daily",
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=10)},
    tags=["volpool", "gpu"],
) as dag:
    wait_for_input = PythonSensor(
        task_id="wait_for_input",
        python_callable=input_ready,
        op_args=[INPUT],
        poke_interval=300,
        timeout=12 * 3600,
        mode="reschedule",
    )
    pool_volumes = VolpoolSubmitOperator(
        task_id="pool_volumes",
        name="volpool-{{ ds }}",
        application=JAR,
        java_class="io.volpool.job.VolpoolMain",
        files="/opt/volpool/get-gpus-resources.sh",
        conf={
            **GPU_CLUSTER_CONF,
            "spark.volpool.input": INPUT,
            "spark.volpool.output": OUTPUT,
            "spark.volpool.output.mode": "overwrite",
        },
        output=OUTPUT,
    )
    wait_for_input >> pool_volumes
