package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.Phase;
import io.volpool.spark.JobMetrics;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the Spark UI, the history server and the event log show of a run, read from
 * the listener events they are built from: the job is described by its pipeline, input and output
 * (not "runJob at SparkHadoopWriter.scala"), its stage carries one accumulator a phase by the
 * summary's name, in seconds, whose sum is the summary's, and Spark's own input metrics of the stage are
 * the bytes and volumes volpool read.
 */
class SparkUiTest {
  @Test
  void theJobIsDescribedAndItsStageShowsEachPhaseBySeconds(@TempDir Path tmp) throws Exception {
    SparkContext sc = SparkTests.spark().sparkContext();
    Map<String, String> descriptions = new ConcurrentHashMap<>();
    Map<String, Object> accumulables = new ConcurrentHashMap<>();
    java.util.List<long[]> inputs = new java.util.concurrent.CopyOnWriteArrayList<>();
    SparkListener l = new SparkListener() {
      @Override
      public void onJobStart(SparkListenerJobStart e) {
        String d = e.properties() == null ? null : e.properties().getProperty("spark.job.description");
        if (d != null) {
          descriptions.put(String.valueOf(e.jobId()), d);
        }
      }

      @Override
      public void onStageCompleted(SparkListenerStageCompleted e) {
        org.apache.spark.executor.InputMetrics in = e.stageInfo().taskMetrics().inputMetrics();
        org.apache.spark.executor.OutputMetrics o = e.stageInfo().taskMetrics().outputMetrics();
        inputs.add(new long[] {in.bytesRead(), in.recordsRead(), o.bytesWritten(), o.recordsWritten()});
        scala.collection.Iterator<AccumulableInfo> it = e.stageInfo().accumulables().values().iterator();
        while (it.hasNext()) {
          AccumulableInfo a = it.next();
          if (a.name().isDefined() && a.value().isDefined()) {
            accumulables.put(a.name().get(), a.value().get());
          }
        }
      }
    };
    sc.addSparkListener(l);
    Path out = tmp.resolve("out");
    try {
      SparkTests.Result r = SparkTests.run(JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir()
          .resolve("volumes_binary.parquet"), "parquet", out));
      assertThat(r.code()).as(r.err()).isZero();
      String read = JobMetrics.phaseName(Phase.READ);
      for (long end = System.nanoTime() + 10_000_000_000L; !accumulables.containsKey(read) && System.nanoTime() < end; ) {
        Thread.sleep(10);
      }
    } finally {
      sc.removeSparkListener(l);
    }
    assertThat(descriptions.values()).as("job descriptions").anySatisfy(d -> assertThat(d).startsWith("volpool fused(")
        .contains("volumes_binary.parquet -> ").contains(out.getFileName().toString()));
    com.fasterxml.jackson.databind.JsonNode summary = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    double kernels = 0;
    for (Phase p : Phase.values()) {
      double inSummary = summary.get("phase_seconds_summed_over_tasks").get(p.label()).asDouble();
      if (inSummary == 0) {
        continue; // Spark shows an accumulator where some task added to it (on the CPU nothing waits for a GPU)
      }
      assertThat(accumulables).as("the stage's accumulators").containsKey(JobMetrics.phaseName(p));
      Object v = accumulables.get(JobMetrics.phaseName(p));
      assertThat(v).as(p.label()).isInstanceOf(Double.class);
      if (p != Phase.COMMIT) {
        // the summary adds the driver's commit to the tasks' own
        assertThat((Double) v).as(p.label() + " seconds against the summary's")
            .isCloseTo(summary.get("phase_seconds_summed_over_tasks").get(p.label()).asDouble(), org.assertj.core.data.Offset.offset(2e-6));
      }
      kernels += p == Phase.KERNELS ? (Double) v : 0;
    }
    assertThat(kernels).as("kernel seconds").isPositive();
    assertThat(accumulables).as("no array of nanoseconds").doesNotContainKey("volpool.phaseNanos");
    assertThat(accumulables.get("volpool.volumesRead")).isEqualTo(2L);
    // Spark's own input metrics of the stage (its page's "Input" column, the REST API): the bytes and volumes read
    assertThat(inputs).as("stages' input and output bytes and records").anySatisfy(v -> assertThat(v)
        .containsExactly(summary.get("bytes_in").asLong(), 2L, summary.get("bytes_out").asLong(), 2L));
    assertThat(summary.get("bytes_in").asLong()).isEqualTo(2L * 3 * 16 * 32 * 32 * 4);
  }

  /**
   * The executor's gauges in Spark's metrics system, through a sink as a cluster's
   * dashboards get them: a run in a JVM of its own with the plugin and the CSV sink writes each volpool
   * gauge, and the last values are the run's volumes and bytes.
   */
  @Test
  void thePluginsGaugesReachSparksMetricsSinks(@TempDir Path tmp) throws Exception {
    Path csv = java.nio.file.Files.createDirectories(tmp.resolve("metrics"));
    Path out = tmp.resolve("out");
    Map<String, String> conf = JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"),
        "parquet", out);
    conf.put("spark.plugins", "io.volpool.spark.VolpoolPlugin");
    conf.put("spark.metrics.conf.*.sink.csv.class", "org.apache.spark.metrics.sink.CsvSink");
    conf.put("spark.metrics.conf.*.sink.csv.period", "1");
    conf.put("spark.metrics.conf.*.sink.csv.unit", "seconds");
    conf.put("spark.metrics.conf.*.sink.csv.directory", csv.toString());
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("child.log"));
    assertThat(c.waitFor(180)).as(c.output()).isZero();
    Map<String, Long> last = new java.util.HashMap<>();
    Map<String, Long> most = new java.util.HashMap<>();
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(csv)) {
      for (Path f : files.toList()) {
        String name = f.getFileName().toString();
        int at = name.indexOf("plugin.io.volpool.spark.VolpoolPlugin.");
        if (at < 0) {
          continue;
        }
        String gauge = name.substring(at + "plugin.io.volpool.spark.VolpoolPlugin.".length()).replace(".csv", "");
        List<String> lines = java.nio.file.Files.readAllLines(f);
        last.put(gauge, Long.parseLong(lines.get(lines.size() - 1).split(",")[1].trim()));
        // the largest reading while the run lasted (the last report may come after the backend closed)
        most.put(gauge, lines.stream().skip(1).mapToLong(l -> Long.parseLong(l.split(",")[1].trim())).max().orElse(0));
      }
    }
    assertThat(last).as("volpool gauges in " + csv).containsKeys("volumesRead", "bytesRead", "volumesWritten",
        "bytesWritten", "tasksFinished", "budgetBytesInUse", "budgetBytesPeak", "budgetBytesLimit");
    assertThat(last).as("the backend's gauges in " + csv).containsKeys(io.volpool.backend.Backend.METRICS
        .toArray(new String[0]));
    assertThat(last.get("volumesRead")).isEqualTo(2L);
    assertThat(last.get("bytesRead")).isEqualTo(2L * 3 * 16 * 32 * 32 * 4);
    assertThat(last.get("volumesWritten")).isEqualTo(2L);
    assertThat(last.get("budgetBytesPeak")).isPositive();
    if (SparkTests.device().equals("gpu")) {
      // the GPU's own: kernel time from CUDA events, device memory of the batches and as the driver sees it, pinned
      for (String g : List.of("gpuKernelNanos", "gpuBusyNanos", "gpuDeviceBytesPeak", "gpuDeviceBytesLimit",
          "gpuDriverBytesUsed", "pinnedBytesPeak")) {
        assertThat(most.get(g)).as(g + " on the GPU").isPositive();
      }
      assertThat(most.get("gpuBusyNanos")).as("busy time holds the kernels'").isGreaterThanOrEqualTo(most.get("gpuKernelNanos"));
    } else {
      assertThat(most.get("gpuKernelNanos")).as("no GPU time on " + SparkTests.device()).isZero();
    }
  }

  /**
   * {@code scripts/volpool report EVENT_LOG}: the report of a run's event log, written
   * by a run in a JVM of its own, says what the run's summary says: volumes and bytes in and out, each
   * phase's seconds, and the tasks per executor.
   */
  @Test
  void theReportOfAnEventLogEqualsTheRunsSummary(@TempDir Path tmp) throws Exception {
    Path events = java.nio.file.Files.createDirectories(tmp.resolve("events"));
    Path out = tmp.resolve("out");
    Map<String, String> conf = JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"),
        "parquet", out);
    conf.put("spark.eventLog.enabled", "true");
    conf.put("spark.eventLog.dir", events.toUri().toString());
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("child.log"));
    assertThat(c.waitFor(180)).as(c.output()).isZero();
    Path log;
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(events)) {
      log = files.filter(p -> !p.getFileName().toString().endsWith(".inprogress")).findFirst().orElseThrow();
    }
    EventLogReport.Report r = EventLogReport.read(new org.apache.hadoop.fs.Path(log.toUri()),
        new org.apache.hadoop.conf.Configuration());
    com.fasterxml.jackson.databind.JsonNode summary = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(r.description()).startsWith("volpool fused(");
    assertThat(r.volumesRead()).isEqualTo(summary.get("volumes_in").asLong()).isEqualTo(2);
    assertThat(r.volumesWritten()).isEqualTo(summary.get("volumes_out").asLong());
    assertThat(r.bytesIn()).isEqualTo(summary.get("bytes_in").asLong());
    assertThat(r.bytesOut()).isEqualTo(summary.get("bytes_out").asLong());
    for (Phase p : Phase.values()) {
      if (p != Phase.COMMIT) {
        assertThat(r.phaseSeconds().get(p.label())).as(p.label()).isCloseTo(
            summary.get("phase_seconds_summed_over_tasks").get(p.label()).asDouble(), org.assertj.core.data.Offset.offset(2e-6));
      }
    }
    assertThat(r.executors()).hasSize(1);
    assertThat(r.executors().values().iterator().next()[2]).as("volumes read by the executor").isEqualTo(2);
    assertThat(r.executors().values().iterator().next()[3] / 1e3).as("the executor's GPU kernel seconds")
        .isCloseTo(summary.get("phase_seconds_summed_over_tasks").get(Phase.KERNELS.label()).asDouble(),
            org.assertj.core.data.Offset.offset(2e-3));
    assertThat(r.peakBudgetBytes()).as("peak budget").isEqualTo(summary.get("peak_budget_bytes").asLong()).isPositive();
    assertThat(r.peakHeapBytes()).as("peak heap").isEqualTo(summary.get("peak_heap_bytes").asLong());
    assertThat(summary.get("memory_budget_bytes").asLong()).as("the budget the executors resolved and ran under")
        .isPositive().isGreaterThanOrEqualTo(summary.get("peak_budget_bytes").asLong());
    assertThat(r.wallSeconds()).isPositive();
    java.io.ByteArrayOutputStream text = new java.io.ByteArrayOutputStream();
    EventLogReport.print(r, new java.io.PrintStream(text, true, java.nio.charset.StandardCharsets.UTF_8));
    assertThat(text.toString(java.nio.charset.StandardCharsets.UTF_8)).contains("volumes       2 read, 2 written")
        .contains("kernels").contains("peak budget")
        .contains(conf.get("spark.volpool.device").equals("gpu") ? "in GPU kernels" : "in CPU kernels");
    // the local warm-up's empty tasks are not the job's
    assertThat(r.executors().values().iterator().next()[0]).as("the job's tasks (one file each)").isEqualTo(
        summary.get("files_out").asLong());
  }

  /**
   * The Spark UI itself, in local mode with the UI on (a JVM of its own, as a notebook's driver runs the
   * job): the REST API's stage shows input bytes equal to the bytes read, input records equal to the
   * volumes, output records equal to the volumes written, and the phase accumulators by name; the job is
   * described; a scrape of the Prometheus servlet lists the plugin's volpool gauges.
   */
  @Test
  void theRestApiAndThePrometheusServletShowTheRun(@TempDir Path tmp) throws Exception {
    int port;
    try (java.net.ServerSocket sock = new java.net.ServerSocket(0)) {
      port = sock.getLocalPort();
    }
    Path saved = tmp.resolve("ui");
    Path out = tmp.resolve("out");
    List<String> args = new java.util.ArrayList<>(List.of(String.valueOf(port), saved.toString(), "0"));
    JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), "parquet", out)
        .forEach((k, v) -> args.addAll(List.of("--conf", k + "=" + v)));
    ProcessBuilder pb = new ProcessBuilder(ChildJvm.command("1g", UiApp.class.getName(), args)).redirectErrorStream(true)
        .redirectOutput(tmp.resolve("ui-app.log").toFile());
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    Process p = pb.start();
    assertThat(p.waitFor(180, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    String log = java.nio.file.Files.readString(tmp.resolve("ui-app.log"));
    assertThat(log).as(log).contains("UI-APP exit 0").contains("UI-APP saved");
    com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
    com.fasterxml.jackson.databind.JsonNode summary = json.readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    com.fasterxml.jackson.databind.JsonNode stage = null;
    for (com.fasterxml.jackson.databind.JsonNode st : json.readTree(saved.resolve("stages.json").toFile())) {
      if (st.path("inputRecords").asLong() > 0) {
        stage = st;
      }
    }
    assertThat(stage).as("a stage with input in " + java.nio.file.Files.readString(saved.resolve("stages.json"))).isNotNull();
    assertThat(stage.path("name").asText()).as("the stage's name").isEqualTo("volpool fused,avgpool3d");
    assertThat(stage.path("inputBytes").asLong()).isEqualTo(summary.get("bytes_in").asLong());
    assertThat(stage.path("inputRecords").asLong()).isEqualTo(2);
    assertThat(stage.path("outputRecords").asLong()).isEqualTo(2);
    assertThat(stage.path("outputBytes").asLong()).isEqualTo(summary.get("bytes_out").asLong());
    java.util.Set<String> names = new java.util.HashSet<>();
    for (com.fasterxml.jackson.databind.JsonNode a : stage.path("accumulatorUpdates")) {
      names.add(a.path("name").asText());
    }
    assertThat(names).contains(JobMetrics.phaseName(Phase.READ), JobMetrics.phaseName(Phase.KERNELS),
        "volpool.volumesRead", "volpool.bytesIn");
    assertThat(java.nio.file.Files.readString(saved.resolve("jobs.json"))).contains("volpool fused(");
    assertThat(java.nio.file.Files.readString(saved.resolve("prometheus.txt"))).contains("VolpoolPlugin_volumesRead")
        .contains("VolpoolPlugin_budgetBytesPeak");
  }
}
