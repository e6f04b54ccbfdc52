"""Airflow DAG: the volpool Spark job, daily, through spark-submit on a GPU cluster.

What it does, and why:
- waits for the day's input to be complete (its `_SUCCESS` marker) before submitting;
- submits with `conf=` (merged over the cluster's spark-defaults.conf, which `properties_file` would replace)
  and a name per day, so the Spark UI and the history server show which day ran;
- writes each day to its own output with `mode=resume`: a retry after a lost node or a killed driver keeps what
  the failed attempt's tasks committed and runs only the rest, and a rerun of a day whose output is complete
  (same settings and input) runs nothing; to make a day again after its input or settings changed (resume then
  refuses, exit 2, naming what changed), trigger it with the param `mode` = `overwrite`;
- reads the run's status file, `.<output name>.volpool-status.json` beside the output, after spark-submit
  returns: in cluster deploy mode spark-submit's exit code does not say whether the driver failed;
- does not retry deterministic failures: exit 2 (invalid settings), 3 (bad input) and 4 (the environment:
  device=gpu without a usable GPU) fail the task at once with volpool's message; exit 1 (anything else: a
  lost executor, a full disk) is retried; exit 5 (done, with bad records set aside where
  `spark.volpool.badRecords.path` says) succeeds with a warning naming how many and where.

Targets Airflow 2.x (2.7 on, `airflow.sensors.python`) and 3.x (`airflow.providers.standard`), with
apache-airflow-providers-apache-spark, a `spark_default` connection to the cluster, and pyarrow on the workers to
read the status file and the input marker from HDFS or S3 (local paths need nothing; without pyarrow an hdfs:// or
s3a:// path fails the task at once, naming it). The cluster settings come from `spark-gpu.properties`, the same
file as `conf/spark-gpu.properties` in the repository, installed beside the jar (`VOLPOOL_SPARK_CONF` names
another): one source for spark-submit and the DAG.
"""
import json
import os
import posixpath
from datetime import datetime, timedelta, timezone

from airflow import DAG
from airflow.exceptions import AirflowException, AirflowFailException
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

try:  # Airflow 3
    from airflow.providers.standard.sensors.python import PythonSensor
except ImportError:  # Airflow 2
    from airflow.sensors.python import PythonSensor

JAR = "/opt/volpool/volpool-job-0.1.0-SNAPSHOT-spark.jar"
INPUT = "hdfs:///volumes/{{ ds }}"
OUTPUT = "hdfs:///pooled/{{ ds }}"
DETERMINISTIC = {2: "invalid settings", 3: "bad input", 4: "no usable GPU"}
# done, with bad records set aside (spark.volpool.badRecords.path): the output holds every other record
SET_ASIDE = 5

SPARK_CONF = os.environ.get("VOLPOOL_SPARK_CONF", "/opt/volpool/spark-gpu.properties")


def load_properties(path):
    """KEY=VALUE lines of a Spark properties file (comments and blank lines skipped)."""
    conf = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            key, sep, value = line.partition("=")
            if not sep:
                key, _, value = line.partition(" ")
            conf[key.strip()] = value.strip()
    return conf


# the GPU cluster's settings, as conf/spark-gpu.properties holds them, and this deployment's model
GPU_CLUSTER_CONF = {**load_properties(SPARK_CONF), "spark.volpool.fused.weights": "hdfs:///models/fused.safetensors"}


def _open(path):
    """A file on HDFS, S3 or the local disk, as text; None when it does not exist."""
    try:
        from pyarrow import fs
        filesystem, p = fs.FileSystem.from_uri(path)
        if filesystem.get_file_info(p).type == fs.FileType.NotFound:
            return None
        with filesystem.open_input_stream(p) as f:
            return f.read().decode("utf-8")
    except ImportError as e:
        scheme = path.split("://", 1)[0] if "://" in path else "file"
        if scheme != "file":
            # without it the sensor would wait its 12 h for a marker it cannot see
            raise AirflowFailException(
                f"cannot read {path}: pyarrow is not installed on this Airflow worker ({e}); install pyarrow"
                f" (with HDFS/S3 support) where the DAG's tasks run") from e
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


def _instant(t):
    """A time as an aware datetime (volpool writes UTC with a Z; naive times are taken as UTC); None: the epoch."""
    if t is None:
        return datetime.min.replace(tzinfo=timezone.utc)
    if isinstance(t, str):
        t = datetime.fromisoformat(t.replace("Z", "+00:00"))
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


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
        if status is not None and started is not None and _instant(status.get("finished_at")) < _instant(started):
            status = None  # left by an earlier attempt: this one never got that far
        if status is None:
            raise AirflowException(
                f"volpool wrote no status beside {self.output} for this attempt: the driver did not finish;"
                f" see the spark-submit log above") from failure
        code = status["exit_code"]
        if code in DETERMINISTIC:
            raise AirflowFailException(
                f"volpool failed with {DETERMINISTIC[code]} (exit {code}), not retried: {status['message']}")
        if code == SET_ASIDE:
            self.log.warning("volpool set %s bad record(s) aside in %s: %s", status.get("bad_records"),
                             status.get("bad_records_file"), status["message"])
            return status
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
    # resume: retries keep the committed work of the attempt before; overwrite: make the day again from scratch
    params={"mode": "resume"},
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
            "spark.volpool.output.mode": "{{ params.mode }}",
        },
        output=OUTPUT,
    )
    wait_for_input >> pool_volumes
