"""Tests of airflow/volpool_dag.py without Airflow: stub modules with the provider's operator signature.

  python3 airflow/tests/test_volpool_dag.py      (run by AirflowDagTest in mvn verify)
"""
import datetime, importlib.util, json, os, sys, tempfile, types, unittest


class AirflowException(Exception):
    pass


class AirflowFailException(AirflowException):
    pass


class BaseOperator:
    template_fields = ()

    def __init__(self, *, task_id, retries=None, retry_delay=None, **kwargs):
        self.task_id, self.downstream, self.log = task_id, [], types.SimpleNamespace(info=lambda *a: None, warning=lambda *a: None)
        DAG.current.tasks[task_id] = self

    def __rshift__(self, other):
        self.downstream.append(other.task_id)
        return other


class SparkSubmitOperator(BaseOperator):
    """The provider's constructor (apache-airflow-providers-apache-spark 4.x), keyword-only as there."""
    template_fields = ("application", "conf", "files", "py_files", "jars", "driver_class_path", "packages",
                       "exclude_packages", "keytab", "principal", "proxy_user", "name", "application_args",
                       "env_vars", "properties_file")
    result = None

    def __init__(self, *, application="", conf=None, conn_id="spark_default", files=None, py_files=None,
                 archives=None, driver_class_path=None, jars=None, java_class=None, packages=None,
                 exclude_packages=None, repositories=None, total_executor_cores=None, executor_cores=None,
                 executor_memory=None, driver_memory=None, keytab=None, principal=None, proxy_user=None,
                 name="arrow-spark", num_executors=None, status_poll_interval=1, application_args=None,
                 env_vars=None, verbose=False, spark_binary=None, properties_file=None, yarn_queue=None,
                 deploy_mode=None, use_krb5ccache=False, **kwargs):
        super().__init__(**kwargs)
        self.application, self.conf, self.files, self.java_class = application, conf, files, java_class
        self.name, self.properties_file = name, properties_file

    def execute(self, context):
        if isinstance(SparkSubmitOperator.result, Exception):
            raise SparkSubmitOperator.result


class PythonSensor(BaseOperator):
    def __init__(self, *, python_callable, op_args=None, poke_interval=60, timeout=3600, mode="poke", **kwargs):
        super().__init__(**kwargs)
        self.python_callable, self.op_args, self.mode = python_callable, op_args or [], mode


class DAG:
    current = None

    def __init__(self, dag_id, **kwargs):
        self.dag_id, self.kwargs, self.tasks = dag_id, kwargs, {}

    def __enter__(self):
        DAG.current = self
        return self

    def __exit__(self, *a):
        return False


def stub(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m


stub("airflow", DAG=DAG)
stub("airflow.exceptions", AirflowException=AirflowException, AirflowFailException=AirflowFailException)
stub("airflow.providers"), stub("airflow.providers.apache"), stub("airflow.providers.apache.spark")
stub("airflow.providers.apache.spark.operators")
stub("airflow.providers.apache.spark.operators.spark_submit", SparkSubmitOperator=SparkSubmitOperator)
stub("airflow.sensors"), stub("airflow.sensors.python", PythonSensor=PythonSensor)  # Airflow 2's path
sys.modules.pop("pyarrow", None)
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
os.environ["VOLPOOL_SPARK_CONF"] = os.path.join(ROOT, "conf", "spark-gpu.properties")
spec = importlib.util.spec_from_file_location("volpool_dag", os.path.join(os.path.dirname(__file__), "..", "volpool_dag.py"))
dagmod = importlib.util.module_from_spec(spec)
sys.modules["pyarrow"] = None  # as on a worker without pyarrow: local paths still work
spec.loader.exec_module(dagmod)


class DagTest(unittest.TestCase):
    def setUp(self):
        self.dag = dagmod.dag
        self.submit = self.dag.tasks["pool_volumes"]
        self.tmp = tempfile.mkdtemp()
        self.submit.output = os.path.join(self.tmp, "pooled", "2026-11-30")
        os.makedirs(os.path.dirname(self.submit.output))
        self.start = datetime.datetime(2026, 11, 30, 1, 0, 0)
        self.context = {"ti": types.SimpleNamespace(start_date=self.start)}
        SparkSubmitOperator.result = None

    def write_status(self, code, message="m", finished="2026-11-30T01:05:00"):
        with open(dagmod.status_path(self.submit.output), "w") as f:
            json.dump({"status": "failed" if code else "succeeded", "exit_code": code, "message": message,
                       "finished_at": finished}, f)

    def test_structure(self):
        self.assertEqual(self.dag.dag_id, "volpool_daily")
        self.assertEqual(self.dag.tasks["wait_for_input"].downstream, ["pool_volumes"])
        self.assertIsNone(self.submit.properties_file, "properties_file would replace the cluster's spark-defaults.conf")
        self.assertEqual(self.submit.name, "volpool-{{ ds }}")
        # retries resume from what the failed attempt committed; a run may ask for overwrite
        self.assertEqual(self.submit.conf["spark.volpool.output.mode"], "{{ params.mode }}")
        self.assertEqual(self.dag.kwargs["params"]["mode"], "resume")
        self.assertIn("conf", self.submit.template_fields)
        self.assertEqual(self.submit.conf["spark.volpool.output"], self.dag.tasks["pool_volumes"].conf["spark.volpool.output"])
        self.assertIn("output", self.submit.template_fields)
        self.assertGreater(self.dag.kwargs["default_args"]["retries"], 0)

    def test_cluster_settings_are_the_repositorys_gpu_properties(self):
        props = dagmod.load_properties(os.environ["VOLPOOL_SPARK_CONF"])
        self.assertIn("spark.plugins", props)
        for k, v in props.items():
            if k != "spark.volpool.output.mode":  # each day's output is replaced: a retry is idempotent
                self.assertEqual(self.submit.conf[k], v, k)

    def test_without_pyarrow_a_cluster_path_fails_at_once(self):
        with self.assertRaises(AirflowFailException) as e:
            dagmod.input_ready("hdfs:///volumes/2026-11-30")
        self.assertIn("pyarrow is not installed", str(e.exception))

    def test_staleness_compares_times_not_strings(self):
        # the same instant written with a Z and another offset; a string comparison calls the second stale
        self.write_status(0, finished="2026-11-30T02:05:00+01:00")
        self.assertEqual(self.submit.execute(self.context)["exit_code"], 0)
        self.write_status(0, finished="2026-11-30T00:59:00Z")
        with self.assertRaises(AirflowException):
            self.submit.execute(self.context)

    def test_status_path_is_beside_the_output(self):
        self.assertEqual(dagmod.status_path("hdfs:///pooled/2026-11-30/"), "hdfs:///pooled/.2026-11-30.volpool-status.json")

    def test_input_sensor_waits_for_the_success_marker(self):
        day = os.path.join(self.tmp, "in")
        os.makedirs(day)
        self.assertFalse(dagmod.input_ready(day))
        open(os.path.join(day, "_SUCCESS"), "w").close()
        self.assertTrue(dagmod.input_ready(day))

    def test_success(self):
        self.write_status(0, "succeeded: 256 volumes in, 256 out")
        self.assertEqual(self.submit.execute(self.context)["exit_code"], 0)

    def test_bad_records_set_aside_succeed(self):
        """Exit 5: done, with bad records set aside; the task succeeds (a retry changes nothing)."""
        self.write_status(5, "succeeded: 250 volumes in, 250 out, 6 bad records set aside in file:/bad/r/bad_records.json")
        SparkSubmitOperator.result = AirflowException("spark-submit returned 5")
        self.assertEqual(self.submit.execute(self.context)["exit_code"], 5)

    def test_deterministic_failures_are_not_retried(self):
        for code in (2, 3, 4):
            self.write_status(code, "bad record id=v7: data is null")
            SparkSubmitOperator.result = AirflowException("spark-submit returned 3")
            with self.assertRaises(AirflowFailException) as e:
                self.submit.execute(self.context)
            self.assertIn("not retried", str(e.exception))

    def test_other_failures_are_retried(self):
        self.write_status(1, "executor lost")
        with self.assertRaises(AirflowException) as e:
            self.submit.execute(self.context)
        self.assertNotIsInstance(e.exception, AirflowFailException)

    def test_cluster_mode_success_of_the_submitter_with_a_failed_driver_fails(self):
        self.write_status(3, "bad record")
        SparkSubmitOperator.result = None  # spark-submit in cluster mode returned 0
        with self.assertRaises(AirflowFailException):
            self.submit.execute(self.context)

    def test_missing_or_stale_status_fails(self):
        with self.assertRaises(AirflowException):
            self.submit.execute(self.context)
        self.write_status(0, finished="2026-11-29T23:00:00")
        with self.assertRaises(AirflowException) as e:
            self.submit.execute(self.context)
        self.assertIn("did not finish", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=1)
