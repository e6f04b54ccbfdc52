package io.volpool.job;

import io.volpool.conf.Device;
import io.volpool.conf.FileFormat;
import io.volpool.conf.OutputLayout;
import io.volpool.conf.OutputMode;
import io.volpool.backend.Phase;
import io.volpool.io.CorruptInputException;
import io.volpool.io.OutputSpec;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.io.ShippedConf;
import io.volpool.io.parquet.TensorLayout;
import io.volpool.job.commit.CommittedOutput;
import io.volpool.job.commit.OutputCommit;
import io.volpool.job.config.JobSettings;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import io.volpool.job.io.InputPlanner;
import io.volpool.job.io.NoInputException;
import io.volpool.job.io.ParquetInspector;
import io.volpool.job.io.PathOverlap;
import io.volpool.job.io.PlaneRowPlanner;
import io.volpool.conf.ConfKey;
import io.volpool.op.OperatorInputs;
import io.volpool.op.Pipeline;
import io.volpool.ops.Operators;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import io.volpool.exec.BatchRunner;
import io.volpool.spark.JobMetrics;
import io.volpool.spark.PartitionRunner;
import io.volpool.spark.RunSpec;
import io.volpool.spark.SerializableHadoopConf;
import io.volpool.spark.TaskPlan;
import io.volpool.spark.VolpoolOutputFormat;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;
import scala.reflect.ClassTag$;

/**
 * One run of the volpool job on a given SparkSession. The driver plans the tasks from the input's
 * listing and footers ({@link InputPlanner}); each task reads its splits columnar, runs the
 * pipeline in batches and writes through Hadoop's commit protocol where the output's commit stages it
 * ({@link VolpoolOutputFormat}, {@link OutputCommit}); the driver then checks that what was committed is what
 * was read ({@link CommittedOutput}), writes the summary and publishes the output. {@link #run} reads as
 * those three steps: plan, run the tasks, publish. Stateless
 * apart from the session, which the caller owns.
 */
public final class VolpoolJob {
  private static final Logger LOG = LoggerFactory.getLogger(VolpoolJob.class);
  public static final String SUMMARY_FILE = "_volpool_summary.json";
  /** Parquet row groups of the output are cut after a batch once they hold this much. */
  static final long ROW_GROUP_BYTES = 128L << 20;

  private VolpoolJob() {}

  /** Builds the pipeline the settings describe (driver side); operators read the files they name (e.g. a model). */
  public static Pipeline pipeline(JobSettings s, Configuration conf) throws IOException {
    return pipeline(s, conf, new LinkedHashMap<>());
  }

  /**
   * Builds the pipeline, recording in {@code provenance} each file an operator read: {@code
   * volpool.<role>} (its path) and {@code volpool.<role>.sha256}. A file inside the output is refused
   * before it is read (the output is replaced).
   */
  static Pipeline pipeline(JobSettings s, Configuration conf, Map<String, String> provenance) throws IOException {
    return stages(s, conf, provenance).withOutput(s.outputDtype());
  }

  private static Pipeline stages(JobSettings s, Configuration conf, Map<String, String> provenance) throws IOException {
    return Operators.pipeline(new OperatorInputs() {
      @Override
      public Map<String, String> values() {
        return s.values();
      }

      @Override
      public byte[] readFile(ConfKey<String> key, String role, String why, HeadCheck check) throws IOException {
        String v = key.get(s.values());
        if (v == null) {
          throw new SettingsException("missing setting " + key.key() + ": " + why);
        }
        if (!s.isTransform()) {
          PathOverlap.check(s.output(), VolpoolOptions.OUTPUT.key(), v, key.key(), conf);
        }
        Path p = new Path(v);
        FileSystem fs = p.getFileSystem(conf);
        if (!fs.exists(p)) {
          throw new SettingsException(key.key() + "=" + p + ": file not found");
        }
        if (fs.getFileStatus(p).isDirectory()) {
          throw new SettingsException(key.key() + "=" + p + " is a folder; name the file itself");
        }
        InputPlanner.requireRegular(fs, p, key.key() + "=");
        long length = fs.getFileStatus(p).getLen();
        try (InputStream head = fs.open(p)) {
          check.check(head, length);
        }
        byte[] bytes;
        try (InputStream in = fs.open(p)) {
          bytes = in.readNBytes((int) Math.min(length, Integer.MAX_VALUE - 64));
        }
        if (bytes.length != length) {
          throw new IOException(key.key() + "=" + p + ": the file changed while it was read (" + length + " bytes listed, "
              + bytes.length + " read)");
        }
        provenance.put("volpool." + role + ".sha256", sha256(bytes));
        provenance.put("volpool." + role, v);
        return bytes;
      }
    });
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** What made the output, recorded in every Parquet footer and in the summary. */
  static Map<String, String> provenance(JobSettings s, Pipeline p, Map<String, String> files) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("volpool.version", Version.VERSION);
    m.put("volpool.pipeline", describe(p));
    m.put("volpool.output.dtype", p.output().numpyName());
    m.putAll(files);
    m.put("volpool.input", s.input());
    return m;
  }

  /** The pipeline with every parameter, e.g. {@code fused(3->16, k=3, stride=2, ...),avgpool3d(kernel=3, ...)}. */
  static String describe(Pipeline p) {
    if (p.stages().isEmpty()) {
      return Operators.IDENTITY;
    }
    return p.stages().stream().map(Stage::describe).collect(java.util.stream.Collectors.joining(","));
  }

  /**
   * Threads of the CPU backend: the setting, else {@code local[N]}'s N; on a cluster 0, which each
   * executor resolves to its own cores ({@link io.volpool.exec.ExecutorRuntime#threads}): the driver's host says
   * nothing about the executors'.
   */
  /**
   * What executors need of a run, built from the settings here and only here (the job and
   * {@code Volpool.transform} both call it), so a setting reaches executors one way.
   *
   * @param inputFormat how the input files store volumes; null for a DataFrame's rows
   * @param layout the Parquet input layout, null for .npy input and DataFrames
   * @param outputGap bytes left before each output volume (4 for Parquet values, 0 otherwise)
   * @param outputRows the output holds volumes across rows
   */
  static RunSpec runSpec(JobSettings s, SparkSession spark, Pipeline pipeline, FileFormat inputFormat, TensorLayout layout,
      int outputGap, boolean outputRows) {
    return new RunSpec(pipeline, s.executor().withCpuThreads(cpuThreads(s, spark)), inputFormat, layout, outputGap,
        s.outputRowBytes(), outputRows, s.rescale(), s.badRecordsPath() != null);
  }

  static int cpuThreads(JobSettings s, SparkSession spark) {
    if (s.cpuThreads() > 0) {
      return s.cpuThreads();
    }
    String master = spark.sparkContext().master();
    if (master.startsWith("local")) {
      return Math.max(1, spark.sparkContext().defaultParallelism());
    }
    return 0;
  }

  /** Whether this thread's last run took its output (got past the checks that refuse a run before it starts). */
  private static final ThreadLocal<Boolean> TOOK_OUTPUT = ThreadLocal.withInitial(() -> false);
  /** What this thread's last failed run kept for a resume, as a line for its user; null when nothing. */
  private static final ThreadLocal<String> KEPT = new ThreadLocal<>();

  /** What this thread's last failed run kept for a resume (its tasks that committed), as a line; null when nothing. */
  static String kept() {
    return KEPT.get();
  }

  /**
   * Whether this thread's last run took its output: a run refused before it (the output exists, the settings
   * differ, another run holds it) leaves the output's status file to the run that wrote the output.
   */
  static boolean tookOutput() {
    return TOOK_OUTPUT.get() || tookAny;
  }

  /** A run of this JVM took its output (read by the shutdown hook, on a thread of its own). */
  private static volatile boolean tookAny;

  /** A new run on this thread: it has taken no output, kept nothing, and no commit or signal is its yet. */
  static void resetRunState() {
    TOOK_OUTPUT.set(false);
    KEPT.remove();
    tookAny = false;
    io.volpool.job.commit.CommitGate.reset();
  }

  /**
   * Runs the job: plans it (settings checked against the input, tasks from the listing and footers),
   * runs its tasks into the output's staging, and publishes what they committed once it is checked.
   * After any failure the staging is removed and the output is left as it was.
   */
  public static RunSummary run(SparkSession spark, JobSettings s) throws IOException {
    long t0 = System.nanoTime();
    io.volpool.job.commit.CommitGate.reset();
    TOOK_OUTPUT.set(false);
    KEPT.remove();
    Planned p = plan(spark, s);
    if (p.append() != null && p.append().nothingNew()) {
      return nothingNew(s, p, t0);
    }
    if (s.mode() == OutputMode.RESUME) {
      RunSummary done = alreadyComplete(s, p, t0);
      if (done != null) {
        return done;
      }
    }
    OutputCommit out = OutputCommit.prepare(s.output(), s.mode(), p.conf(), p.manifest());
    TOOK_OUTPUT.set(true);
    tookAny = true;
    KeptTasks kept;
    try {
      p = planLikeResumed(spark, s, p, out);
      kept = KeptTasks.check(out, p.input(), p.npyOut(), p.rowsOut(), p.planeRows(), p.manifest().fingerprint(),
          s.badRecordsPath() != null, p.conf());
    } catch (Throwable e) {
      out.abort(s.mode() == OutputMode.RESUME ? "failed before its tasks: " + e : null);
      throw e;
    }
    if (p.append() != null) {
      out.appendingTo(p.append().existing(), p.append().added());
    }
    io.volpool.job.commit.KillPoints.reach(io.volpool.job.commit.KillPoints.PLANNED);
    io.volpool.job.commit.KillPoints.watchTasks(spark.sparkContext(), p.input().tasks().size() - kept.tasks().size());
    JobMetrics metrics = JobMetrics.register(spark.sparkContext());
    // the application ID: where its executors' logs are (SPARK_HOME/work/<id>, yarn logs) and its name in the history server
    LOG.info("volpool: {} -> {} with pipeline {} (device={}), {} input file(s), {} task(s), staging in {}, application {}",
        s.input(), out.output(), describe(p.pipeline()), s.device(), p.input().files(), p.input().tasks().size(),
        out.staging(), spark.sparkContext().applicationId());
    long npyRanges = p.input().tasks().stream().mapToLong(t -> t.ranges().size()).sum();
    if (npyRanges > 0) {
      // said of the plan that runs: a resumed run's is the earlier run's
      LOG.info("volpool: .npy volumes larger than a task run as {} ranges of output planes in {} separate tasks, each"
          + " reading its planes by position", npyRanges, p.input().tasks().stream().filter(t -> !t.ranges().isEmpty())
          .count());
    }
    if (out.resumes() != null) {
      LOG.info("volpool: resuming run {}: {} of {} task(s) committed by it are kept ({}), {} task(s) run now",
          out.resumes(), kept.tasks().size(), p.input().tasks().size(), p.planeRows() ? kept.progress() + " input rows"
          : kept.volumes() + " volumes", p.input().tasks().size() - kept.tasks().size());
    }
    long total = p.input().progressTotal() < 0 ? -1 : Math.max(0, p.input().progressTotal() - kept.progress());
    // .npy volumes spread as ranges count when their range from plane 0 ends: their share done is in bytes
    long rangeBytes = p.input().tasks().stream().anyMatch(t -> !t.ranges().isEmpty())
        ? p.input().tasks().stream().filter(t -> !kept.tasks().containsKey(t.index())).mapToLong(TaskPlan::bytes).sum()
        : -1;
    RunningTasks running = new RunningTasks(spark.sparkContext());
    try (Progress progress = new Progress(spark.sparkContext(), metrics, total,
        p.planeRows() ? "rows" : "volumes", t0, rangeBytes);
        ResourceWatch watch = !p.local() && !p.input().tasks().isEmpty()
            ? new ResourceWatch(spark.sparkContext(), s.resourceTimeoutSeconds()) : null) {
      // the Spark UI and the history server name the job by what it does, not by Spark's writer
      spark.sparkContext().setJobGroup("volpool", "volpool " + describe(p.pipeline()) + ": " + s.input() + " -> "
          + out.output() + " (" + p.input().tasks().size() + " tasks)", false);
      // and its stage by the pipeline, not "runJob at SparkHadoopWriter.scala:85"
      spark.sparkContext().setCallSite("volpool " + p.pipeline().describe());
      Configuration jobConf;
      try {
        jobConf = runTasks(spark, p, out, metrics, watch, kept.tasks().keySet());
      } finally {
        spark.sparkContext().clearJobGroup();
        spark.sparkContext().clearCallSite();
      }
      LOG.info(progress.finalLine());
      io.volpool.job.commit.KillPoints.reach(io.volpool.job.commit.KillPoints.JOB_COMMITTED);
      return publish(s, p, out, jobConf, metrics, progress.timeline(), t0, kept);
    } catch (Throwable e) {
      // Spark's own exceptions are checked ones thrown from Scala: catch everything. In mode=resume the tasks that
      // committed stay for the next resume, unless the failure was the commit's own check (then nothing is trusted)
      io.volpool.job.commit.CommitGate.failed();
      // the failed job's other attempts still run and write into the staging: let them end first
      running.awaitNone(STRAGGLERS_MILLIS);
      // a failed run keeps what its tasks committed (whatever its mode but append) for a rerun with mode=resume,
      // unless the failure was the commit's own check (then nothing is trusted) or no task committed
      int committed = -2;
      try {
        committed = out.committedTaskCount();
      } catch (IOException | RuntimeException countFailed) {
        LOG.debug("could not count the committed tasks: {}", countFailed.toString());
      }
      boolean keep = s.mode() != OutputMode.APPEND && !(e instanceof io.volpool.job.commit.CommitFailure)
          && committed != 0 && committed != -2;
      out.abort(keep ? String.valueOf(e).lines().findFirst().orElse("failed") : null);
      if (keep) {
        int planned = p.input().tasks().size();
        KEPT.set((committed > 0 ? committed + " of " + planned + " task(s) committed before the failure are kept"
            : "the tasks that committed before the failure are kept") + " (in " + out.staging() + "): rerun the same"
            + " command with --conf " + VolpoolOptions.MODE.key() + "=resume, with the same settings and input, to run"
            + (committed > 0 ? " only the other " + (planned - committed) : " only the rest") + " (a run in another mode, or"
            + " after the input changed, starts over and removes them)");
        LOG.warn("volpool: {}", KEPT.get());
      }
      throw e;
    } finally {
      running.close();
    }
  }

  /** How long a failed run waits for its job's other task attempts to end before it cleans up. */
  static final long STRAGGLERS_MILLIS = 60_000;

  /**
   * Under mode=resume, an output already in place with this run's fingerprint (the same settings and
   * input): nothing is left to do, and the run says so (a retry after a run that committed and then
   * failed to report it); null otherwise.
   */
  private static RunSummary alreadyComplete(JobSettings s, Planned p, long t0) throws IOException {
    Path out = new Path(s.output());
    FileSystem fs = out.getFileSystem(p.conf());
    if (!OutputCommit.exists(fs, out)) {
      return null;
    }
    io.volpool.job.commit.RunManifest done = io.volpool.job.commit.RunManifest.read(fs, out);
    if (done == null || !done.fingerprint().equals(p.manifest().fingerprint())) {
      return null; // prepare refuses it, saying what differs
    }
    LOG.info("volpool: {} is complete already, made by run(s) {} from the same settings and input: nothing to resume",
        out, String.join(", ", done.runs()));
    // a run killed after its output landed may have left its owner file, manifest or the old output it replaced
    OutputCommit.removeDeadLeftovers(s.output(), p.conf());
    Map<String, Object> continued = new LinkedHashMap<>();
    continued.put("tasks_kept", 0L);
    continued.put("tasks_run", 0L);
    continued.put("output", "complete already, nothing run");
    RunSummary none = RunSummary.nothingRun("complete already", new RunSummary.Run(s.input(), s.inputFormat().toString(),
        fs.makeQualified(out).toString(), s.outputFormat().toString(), p.pipeline().describe(), "none (nothing run)"),
        (System.nanoTime() - t0) / 1e9, p.input().skipped(), p.outSpec().metadata(), s.effective(), continued);
    // the output holds what the run that made it set aside: said again (exit 5), as that run may have died before it
    // could say so itself
    io.volpool.job.commit.SetAside aside = io.volpool.job.commit.SetAside.NONE;
    Path summaryFile = new Path(out, SUMMARY_FILE);
    if (fs.exists(summaryFile)) {
      try (var in = fs.open(summaryFile)) {
        com.fasterxml.jackson.databind.JsonNode j = new com.fasterxml.jackson.databind.ObjectMapper().readTree(in);
        if (j.path("bad_records").asLong() > 0 && j.hasNonNull("bad_records_file")) {
          aside = new io.volpool.job.commit.SetAside(j.get("bad_records").asLong(), java.util.Set.of(),
              new Path(j.get("bad_records_file").asText()));
        }
      }
    }
    return aside.records() == 0 ? none : new RunSummary(none.status(), none.run(), none.counts(), none.resources(),
        none.skipped(), none.provenance(), none.settings(), none.timeline(), none.continued(), aside);
  }

  /**
   * Under mode=append, an input whose every file is in the output already: the run ends at once, saying so,
   * with 0 volumes (a schedule's run on a day without new input).
   */
  private static RunSummary nothingNew(JobSettings s, Planned p, long t0) throws IOException {
    Path out = new Path(s.output());
    // a run killed after its append landed may have left its staging, owner file and manifest
    OutputCommit.removeDeadLeftovers(s.output(), p.conf());
    LOG.info("volpool: nothing new in {}: its {} input file(s) are all in {} already (mode=append); 0 volumes processed",
        s.input(), p.append().known(), out);
    return RunSummary.nothingRun("nothing new", new RunSummary.Run(s.input(), s.inputFormat().toString(),
        out.getFileSystem(p.conf()).makeQualified(out).toString(), s.outputFormat().toString(), p.pipeline().describe(),
        "none (nothing run)"), (System.nanoTime() - t0) / 1e9, p.input().skipped(), Map.of(), s.effective(),
        p.append().describe());
  }

  /**
   * A resumed run's plan must number its tasks as the earlier run did (a kept task is known by its
   * number): the earlier run's planning (split size, open cost, cores) is used when it differs, and the
   * tasks' digest must then agree; otherwise nothing is kept.
   */
  private static Planned planLikeResumed(SparkSession spark, JobSettings s, Planned p, OutputCommit out)
      throws IOException {
    io.volpool.job.commit.RunManifest earlier = out.resumedManifest();
    if (earlier == null || p.manifest().planning().equals(earlier.planning())) {
      return p;
    }
    Planning then = Planning.of(earlier.planning());
    Planned again = then == null ? null : withInput(p, planInput(s, p.conf(), p.pipeline(), p.layout(),
        p.rowsOut() || p.outSpec().npyInPlace(), then),
        then);
    if (again == null || !again.manifest().planning().equals(earlier.planning())) {
      LOG.warn("volpool: run {} planned its tasks otherwise ({}; now {}); none of its tasks can be matched, all run again",
          out.resumes(), earlier.planning(), p.manifest().planning());
      out.dropAllTasks();
      return p;
    }
    LOG.info("volpool: planned with run {}'s split size and cores ({}), so its task numbers hold", out.resumes(),
        earlier.planning());
    out.rewriteManifest(again.manifest());
    return again;
  }

  /**
   * What the driver decided before any task runs.
   *
   * @param input the tasks and what the listing found
   * @param layout the Parquet input layout, null for .npy input
   * @param rowsOut the output holds volumes across rows
   * @param gpuCheck in local mode with device=gpu, the check that a usable GPU exists (waited for before publishing)
   */
  private record Planned(Configuration conf, boolean local, Pipeline pipeline, InputPlanner.Plan input, TensorLayout layout,
      boolean npyIn, boolean npyOut, boolean planeRows, boolean rowsOut, OutputSpec outSpec, RunSpec spec,
      LocalGpuCheck gpuCheck, io.volpool.job.commit.RunManifest manifest, io.volpool.job.commit.Appending append) {}

  /**
   * How the input is cut into tasks: Spark's split size and open cost, the cores it spreads over, and
   * whether a volume larger than a task is spread over several as ranges. Recorded in the run's
   * manifest, so a resumed run numbers its tasks as the earlier run did.
   */
  record Planning(long maxPartitionBytes, long openCost, int cores, boolean spread) {
    Map<String, String> toMap(InputPlanner.Plan plan) {
      Map<String, String> m = new LinkedHashMap<>();
      m.put("maxPartitionBytes", String.valueOf(maxPartitionBytes));
      m.put("openCostInBytes", String.valueOf(openCost));
      m.put("cores", String.valueOf(cores));
      m.put("spreadVolumes", String.valueOf(spread));
      m.put("tasks", String.valueOf(plan.tasks().size()));
      m.put("plan.sha256", sha256(plan.tasks().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      return m;
    }

    /** The planning a manifest recorded, or null when it recorded none. */
    static Planning of(Map<String, String> m) {
      try {
        return new Planning(Long.parseLong(m.get("maxPartitionBytes")), Long.parseLong(m.get("openCostInBytes")),
            Integer.parseInt(m.get("cores")), !"false".equals(m.get("spreadVolumes")));
      } catch (RuntimeException e) {
        return null;
      }
    }
  }

  /**
   * The input planned with {@code pl}: .npy files or Parquet splits, or volumes stored across rows. When the
   * output takes a volume's planes from several tasks ({@code rangesOut}: written across rows, or .npy written
   * in place), a volume larger than a task (stored across rows, or a C-order .npy) runs as ranges of its output
   * planes in several tasks, unless {@code pl} says not to spread.
   */
  private static InputPlanner.Plan planInput(JobSettings s, Configuration conf, Pipeline pipeline, TensorLayout layout,
      boolean rangesOut, Planning pl) throws IOException {
    return planInput(s, conf, pipeline, layout, rangesOut, pl, f -> true);
  }

  /** As above over the input files {@code take} accepts (an appending run's new ones). */
  private static InputPlanner.Plan planInput(JobSettings s, Configuration conf, Pipeline pipeline, TensorLayout layout,
      boolean rangesOut, Planning pl, java.util.function.Predicate<org.apache.hadoop.fs.FileStatus> take) throws IOException {
    boolean spread = pl.spread() && rangesOut;
    if (layout != null && layout.planeRows()) {
      return PlaneRowPlanner.plan(s.input(), layout, conf, pl.maxPartitionBytes(), pl.openCost(), pl.cores(),
          spread ? pipeline : null, take);
    }
    return s.inputFormat() == FileFormat.NPY
        ? InputPlanner.npy(s.input(), conf, pl.maxPartitionBytes(), pl.openCost(), pl.cores(), take, spread ? pipeline : null)
        : InputPlanner.parquet(s.input(), conf, pl.maxPartitionBytes(), pl.openCost(), pl.cores(), take);
  }

  /** The path of input file {@code f} relative to the input folder {@code base} (its name when the input is one file). */
  private static String relative(String base, org.apache.hadoop.fs.FileStatus f) {
    return InputPlanner.relative(base, f.getPath().toUri().getPath());
  }

  /** {@code p} with the input planned again with {@code pl} (a resumed run's, as the earlier run planned it). */
  private static Planned withInput(Planned p, InputPlanner.Plan plan, Planning pl) {
    return new Planned(p.conf(), p.local(), p.pipeline(), plan, p.layout(), p.npyIn(), p.npyOut(), p.planeRows(),
        p.rowsOut(), p.outSpec(), p.spec(), p.gpuCheck(), p.manifest().withPlanning(pl.toMap(plan)), p.append());
  }

  /**
   * What the settings decide of the results, for the run's manifest and fingerprint: the provenance
   * (version, pipeline with every parameter, output dtype, the models' SHA-256, the input) and the
   * formats, layouts and input settings that change what is written.
   */
  static Map<String, String> resultSettings(JobSettings s, Map<String, String> provenance, boolean npyOut, boolean rowsOut) {
    Map<String, String> m = new LinkedHashMap<>(provenance);
    m.put("volpool.input.format", s.inputFormat().toString());
    m.put("volpool.output.format", s.outputFormat().toString());
    m.put("volpool.output.layout", npyOut ? "npy" : rowsOut ? "rows" : "volume");
    m.put("volpool.output.compression", s.outputCompression());
    m.put("volpool.output.rowBytes", String.valueOf(s.outputRowBytes()));
    m.put("volpool.input.tensorColumn", String.valueOf(s.tensorColumn()));
    m.put("volpool.input.tensorShape", String.valueOf(s.tensorShape()));
    m.put("volpool.input.rescale", String.valueOf(s.rescale()));
    return m;
  }

  /** The listed input files by path relative to the input, with size and modification time, for the manifest. */
  static List<io.volpool.job.commit.RunManifest.InputFile> inputFiles(Path root, List<org.apache.hadoop.fs.FileStatus> files,
      Configuration conf) throws IOException {
    String base = root.getFileSystem(conf).makeQualified(root).toUri().getPath();
    List<io.volpool.job.commit.RunManifest.InputFile> out = new ArrayList<>();
    for (org.apache.hadoop.fs.FileStatus f : files) {
      out.add(new io.volpool.job.commit.RunManifest.InputFile(relative(base, f), f.getLen(), f.getModificationTime()));
    }
    return out;
  }

  /** Checks the settings against the input and plans the tasks; in local mode also starts the executor's warm-up. */
  private static Planned plan(SparkSession spark, JobSettings s) throws IOException {
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    for (var k : List.of(VolpoolOptions.INPUT, VolpoolOptions.OUTPUT)) {
      String v = k.get(s.values());
      if (v != null && v.chars().anyMatch(ch -> ch < 0x20 || ch == 0x7f)) {
        // a newline in a path splits the lines of the logs, the status and owner files that name it
        throw new SettingsException(k.key() + " holds a control character (a newline, tab or escape): "
            + v.replaceAll("\\p{Cntrl}", "?") + "; name a path without one");
      }
    }
    OutputCommit.requireSafe(s.output(), conf);
    // before anything is read, written or deleted: the output may not be, contain or lie inside what the job reads
    PathOverlap.check(s.output(), VolpoolOptions.OUTPUT.key(), s.input(), VolpoolOptions.INPUT.key(), conf);
    if (s.badRecordsPath() != null) {
      io.volpool.job.commit.SetAside.requireWritable(s.badRecordsPath(), conf);
      for (String[] other : new String[][] {{s.output(), VolpoolOptions.OUTPUT.key()}, {s.input(), VolpoolOptions.INPUT.key()}}) {
        if (PathOverlap.overlap(s.badRecordsPath(), other[0], conf)) {
          throw new SettingsException(VolpoolOptions.BAD_RECORDS_PATH.key() + "=" + s.badRecordsPath() + " overlaps "
              + other[1] + "=" + other[0] + ": the bad records would be " + (other[0].equals(s.output())
                  ? "replaced with the output" : "read as input") + "; choose a folder apart from both, e.g. beside the output");
        }
      }
    }
    // a dead run's half-done commit (an output moved aside, an append half moved in) is finished or undone before
    // the output is looked at: an append plans against the output as it is, never against a missing one
    OutputCommit.recover(s.output(), conf);
    refuseLocalOutputOnCluster(spark.sparkContext().master(), s, conf);
    // in local mode the driver is the executor: what an executor would refuse is refused here, before any work
    boolean local = spark.sparkContext().master().startsWith("local");
    if (local) {
      LocalTaskWarmUp.start(spark.sparkContext(), Math.max(1, spark.sparkContext().defaultParallelism()));
    }
    if (local && s.device() != Device.CPU) {
      // the driver is the executor: initialise CUDA, open the GPU, allocate the pinned pool and load Snappy while the
      // job plans (not for device=cpu: on 2 cores a warm-up thread beside the planning driver moved the first commit
      // by nothing)
      io.volpool.exec.ExecutorRuntime.start(s.executor().withCpuThreads(cpuThreads(s, spark)), List.of());
    }
    Map<String, String> files = new LinkedHashMap<>();
    Pipeline pipeline = pipeline(s, conf, files);
    Path inputPath = new Path(s.input());
    FileSystem inFs = inputPath.getFileSystem(conf);
    if (!inFs.exists(inputPath)) {
      throw new SettingsException(VolpoolOptions.INPUT.key() + "=" + s.input() + ": path not found");
    }
    boolean npyIn = s.inputFormat() == FileFormat.NPY;
    long maxPartition = spark.sparkContext().getConf().getSizeAsBytes("spark.sql.files.maxPartitionBytes", "128m");
    long openCost = spark.sparkContext().getConf().getSizeAsBytes("spark.sql.files.openCostInBytes", "4m");
    int cores = spark.sparkContext().defaultParallelism();
    Planning planning = new Planning(maxPartition, openCost, cores, s.spreadVolumes());
    // the input files, listed: the manifest records them, an appending run takes those the output lacks
    List<String> skipped = new ArrayList<>();
    List<org.apache.hadoop.fs.FileStatus> listed = InputPlanner.list(inputPath, conf, npyIn
        ? n -> n.toLowerCase(java.util.Locale.ROOT).endsWith(".npy") : n -> true, npyIn ? ".npy" : "Parquet", skipped);
    if (listed.isEmpty()) {
      throw new NoInputException(s.input(), npyIn ? ".npy" : "Parquet", skipped);
    }
    if (!skipped.isEmpty()) {
      LOG.warn("volpool: {} file(s) in {} are not input and were skipped: {}", skipped.size(), s.input(),
          String.join(", ", skipped.subList(0, Math.min(20, skipped.size()))) + (skipped.size() > 20 ? ", ..." : ""));
    }
    TensorLayout layout = npyIn ? null : layout(s, listed.get(0).getPath(), conf);
    if (layout != null && !layout.isBinary()) {
      // every tensor has this shape: settings that no tensor can pass are a settings error, found before any task
      try {
        pipeline.outputShape(layout.fixedShape());
      } catch (IllegalArgumentException e) {
        throw new SettingsException("every tensor of " + s.input() + " has shape " + layout.fixedShape() + ", which the"
            + " pipeline cannot take: " + e.getMessage(), e);
      }
    }
    boolean planeRows = layout != null && layout.planeRows();
    boolean npyOut = s.outputFormat() == FileFormat.NPY;
    if (npyOut && !npyIn && !planeRows) {
      throw new SettingsException(VolpoolOptions.OUTPUT_FORMAT.key() + "=npy needs " + VolpoolOptions.INPUT_FORMAT.key()
          + "=npy (one output file per input file) or Parquet input of volumes stored across rows (one output file per"
          + " volume, named <id>.npy); " + s.input() + " holds one volume per row: write Parquet output");
    }
    if (planeRows && s.badRecordsPath() != null) {
      throw new SettingsException(VolpoolOptions.BAD_RECORDS_PATH.key() + " sets aside bad records of volumes stored one"
          + " per row or per .npy file; " + s.input() + " holds volumes stored across rows (it has d0/d1 columns), and a"
          + " volume cannot go on without one of its rows: unset it (a bad row then fails the job, naming it)");
    }
    if (planeRows && s.outputLayout() == OutputLayout.VOLUME) {
      throw new SettingsException(VolpoolOptions.OUTPUT_LAYOUT.key() + "=volume: the input holds volumes stored across rows"
          + " (it has d0/d1 columns), which may be larger than one row can hold; they are written across rows (rows or auto)");
    }
    // across rows when the input is, or when asked: then a volume larger than output.rowBytes takes several rows
    boolean rowsOut = !npyOut && (planeRows || s.outputLayout() == OutputLayout.ROWS);
    // .npy output on a local or shared POSIX filesystem: a volume's planes go by position into its one file, from
    // any task; on HDFS as parts joined by concat, on S3 as parts the store copies into one upload (so a volume is
    // spread over tasks, and has no size limit); elsewhere a .npy is written by one task
    io.volpool.io.npy.NpyPlanesInPlace.Mode npyRanges = npyOut ? io.volpool.io.npy.NpyPlanesInPlace.Mode.of(
        new Path(s.output()), conf) : io.volpool.io.npy.NpyPlanesInPlace.Mode.NONE;
    boolean npyInPlace = npyRanges != io.volpool.io.npy.NpyPlanesInPlace.Mode.NONE;
    // the run's manifest: what decides its results and the input it reads; its fingerprint goes into every footer
    Map<String, String> provenance = provenance(s, pipeline, files);
    Map<String, String> result = resultSettings(s, provenance, npyOut, rowsOut);
    // the output's columns: an append whose input would write others is refused (Appending.check)
    result.put(io.volpool.job.commit.RunManifest.OUTPUT_SCHEMA, (layout == null ? TensorLayout.npyOutputSchema(rowsOut)
        : layout.outputSchema(rowsOut)).toString().replaceAll("\\s+", " ").trim());
    io.volpool.job.commit.RunManifest manifest = new io.volpool.job.commit.RunManifest(result,
        inputFiles(inputPath, listed, conf), List.of());
    io.volpool.job.commit.Appending append = null;
    java.util.function.Predicate<org.apache.hadoop.fs.FileStatus> take = f -> true;
    if (s.mode() == OutputMode.APPEND) {
      Path outPath = new Path(s.output());
      FileSystem outFs = io.volpool.io.Files2.fs(outPath, conf);
      append = io.volpool.job.commit.Appending.check(outFs, outFs.makeQualified(outPath), manifest);
      if (append.nothingNew()) {
        // nothing to read: no footer is opened, no task runs (a daily schedule's quiet day)
        return new Planned(conf, local, pipeline, new InputPlanner.Plan(List.of(), 0, 0, 0, skipped, null), layout,
            npyIn, npyOut, planeRows, rowsOut, null, null, null, manifest, append);
      }
      java.util.Set<String> added = append.added();
      String base = inputPath.getFileSystem(conf).makeQualified(inputPath).toUri().getPath();
      take = f -> added.contains(relative(base, f));
    }
    InputPlanner.Plan plan = planInput(s, conf, pipeline, layout, rowsOut || npyInPlace, planning, take);
    if (planeRows) {
      // volumes stored across rows: the rows of each volume are found and checked on the driver
      // written across rows (Parquet), a volume larger than a task runs as ranges of its planes in several tasks
      long entries = plan.tasks().stream().mapToLong(t -> t.volumes().size()).sum();
      LOG.info("volpool: {} input rows hold {} volume(s) stored across rows; they run in slabs along D{}",
          plan.rows(), plan.volumes(), entries > plan.volumes() ? ", the largest as " + entries + " ranges of output"
              + " planes in separate tasks" : "");
    }
    if (rowsOut && !planeRows && !npyIn) {
      PlaneRowPlanner.requireUniqueIds(s.input(), layout, conf);
    }
    if (append != null && append.existing() != null && layout != null && layout.hasId()) {
      // an append never publishes an id the output holds (a renamed file, another copy of a volume)
      Path outPath = new Path(s.output());
      io.volpool.job.io.OutputIds.requireNew(outPath, npyOut, planeRows ? io.volpool.job.io.OutputIds.ofPlan(plan)
          : io.volpool.job.io.OutputIds.ofInput(listed, take, conf), conf, append.existing());
    }
    manifest = manifest.withPlanning(planning.toMap(plan));
    provenance.put(ParquetBatchWriter.FINGERPRINT_KEY, manifest.fingerprint());
    OutputSpec outSpec = new OutputSpec(s.outputFormat(),
        (layout == null ? TensorLayout.npyOutputSchema(rowsOut) : layout.outputSchema(rowsOut)).toString(),
        layout == null ? List.of() : layout.passthrough(), codec(s), ROW_GROUP_BYTES, provenance, s.outputRowBytes(),
        npyRanges);
    RunSpec spec = runSpec(s, spark, pipeline, s.inputFormat(), layout, npyOut ? 0 : ParquetBatchWriter.GAP, rowsOut);
    if (local) {
      io.volpool.exec.ExecutorRuntime.budgetBytes(spec.settings()); // a budget the heap cannot hold
    }
    // the driver is the executor: a missing GPU is said once, in one line, rather than in a failed task's stack trace;
    // now when the warm-up has probed CUDA already, else beside the job's submission while CUDA initialises (0.1-0.3 s
    // on the H200, which the first tasks spend deserializing), and waited for before anything is committed
    LocalGpuCheck gpuCheck = s.device() == Device.GPU && local ? LocalGpuCheck.start() : null;
    if (local && s.device() != Device.CPU && layout != null && !planeRows && !plan.tasks().isEmpty()) {
      // the first wave's batches, made while the job is submitted rather than by its tasks all at once
      BatchWarmUp.start(spec, layout, plan.tasks().get(0), Math.min(plan.tasks().size(), cores), conf);
    }
    return new Planned(conf, local, pipeline, plan, layout, npyIn, npyOut, planeRows, rowsOut, outSpec, spec, gpuCheck,
        manifest, append);
  }

  /** Runs every task, each writing its committed files where {@code out} stages them; returns the job's configuration. */
  private static Configuration runTasks(SparkSession spark, Planned p, OutputCommit out, JobMetrics metrics,
      ResourceWatch watch, java.util.Set<Integer> kept) throws IOException {
    Configuration conf = p.conf();
    JavaPairRDD<Void, BatchRunner.Finished> batches = tasks(spark, p.input(), conf, kept)
        .mapPartitionsToPair(new PartitionRunner(p.spec(), JavaSparkContext.fromSparkContext(spark.sparkContext())
            .broadcast(new SerializableHadoopConf(conf)), metrics));
    Job job = Job.getInstance(conf);
    job.setOutputFormatClass(VolpoolOutputFormat.class);
    job.setOutputKeyClass(Void.class);
    job.setOutputValueClass(BatchRunner.Finished.class);
    FileOutputFormat.setOutputPath(job, out.staging());
    out.configure(job.getConfiguration());
    // the job commit below is algorithm 1's (task folders merged at job commit)
    job.getConfiguration().setInt("mapreduce.fileoutputcommitter.algorithm.version", 1);
    VolpoolOutputFormat.setSpec(job.getConfiguration(), p.outSpec());
    if (out.resumes() != null) {
      // the staging folder holds the kept tasks' committed folders already: it is this job's on purpose
      job.getConfiguration().setBoolean(VolpoolOutputFormat.RESUMED, true);
    }
    if (p.append() != null) {
      // an appending run's parts are named by the run (part-<id>-r-00000.parquet): they join parts of earlier runs
      job.getConfiguration().set("mapreduce.output.basename", io.volpool.job.commit.Appending.partPrefix(out.id()));
    }
    try {
      // Spark's writer carries this configuration in every task: shipped without Hadoop's defaults, which the
      // output format lays it over again
      batches.saveAsNewAPIHadoopDataset(ShippedConf.shrink(job.getConfiguration()));
    } catch (Exception e) {
      // Spark's exceptions are checked ones thrown from Scala
      if (watch != null && watch.fired()) {
        throw watch.failure();
      }
      throw e;
    }
    return job.getConfiguration();
  }

  /**
   * Publishes what the tasks committed: makes it countable, counts it from the files themselves, checks
   * it is what was read, writes the summary beside it and puts it in place.
   *
   * @throws io.volpool.job.commit.CommitFailure when the count differs or another run committed meanwhile
   */
  private static RunSummary publish(JobSettings s, Planned p, OutputCommit out, Configuration jobConf, JobMetrics metrics,
      Timeline timeline, long t0, KeptTasks kept) throws IOException {
    if (p.gpuCheck() != null) {
      p.gpuCheck().require();
    }
    long tc = System.nanoTime();
    // an append on S3 completes its files into the output itself: what it adds is the output after less before
    CommittedOutput before = p.append() != null && p.append().existing() != null && out.staging().equals(out.output())
        ? CommittedOutput.count(out.output(), p.npyOut(), p.rowsOut(), p.conf()) : null;
    // the committed files, where they can be counted (on S3: completed, in the output)
    Path committedTo = out.publish(jobConf);
    // the bad records the committed tasks set aside: out of the output, into the bad-records path, counted
    io.volpool.job.commit.SetAside bad = s.badRecordsPath() == null ? io.volpool.job.commit.SetAside.NONE
        : io.volpool.job.commit.SetAside.gather(committedTo, s.badRecordsPath(), out.id(), p.conf());
    // a run that does not publish leaves no bad_records.json for records it never set aside
    boolean published = false;
    try {
      // (not into an existing output an append adds to: it has its schema, and the name would clash the next time)
      boolean addsToOutput = p.append() != null && p.append().existing() != null;
      if (!p.npyOut() && (p.input().rows() == 0 || bad.records() > 0 && !addsToOutput
          && !holdsParquet(committedTo, p.conf()))) {
        // no volumes: one file of the output's schema and no rows, as Spark writes for an empty DataFrame, so a
        // reader of the output (spark.read.parquet) still finds its schema
        new ParquetBatchWriter(new Path(committedTo, "part-00000-empty.parquet"), p.outSpec(), p.conf(),
            new io.volpool.backend.PhaseTimes()).close();
      }
      if (p.outSpec().npyRanges().parts()) {
        // the tasks' parts joined in order into their files (HDFS concat, S3 copies inside the store: no byte through
        // the driver), to be counted
        long joinStart = System.nanoTime();
        int joined = io.volpool.io.npy.NpyPlanesInPlace.joinParts(io.volpool.io.Files2.fs(committedTo, p.conf()),
            committedTo, p.outSpec().npyRanges(), io.volpool.job.commit.S3aUploads::joinByCopies);
        if (joined > 0) {
          LOG.info("volpool: {} .npy file(s) joined from their range tasks' parts ({}) in {} s", joined,
              p.outSpec().npyRanges() == io.volpool.io.npy.NpyPlanesInPlace.Mode.PARTS ? "HDFS concat" : "copies in S3",
              String.format(java.util.Locale.ROOT, "%.1f", (System.nanoTime() - joinStart) / 1e9));
        }
      }
      if (p.outSpec().npyRanges() == io.volpool.io.npy.NpyPlanesInPlace.Mode.POSITIONED) {
        // the files the tasks wrote in place join the output's other files, to be counted with them
        FileSystem fs = io.volpool.io.Files2.fs(committedTo, p.conf());
        Path files = new Path(committedTo, io.volpool.io.npy.NpyPlanesInPlace.FILES);
        if (fs.exists(files)) {
          for (org.apache.hadoop.fs.FileStatus f : fs.listStatus(files)) {
            io.volpool.io.Files2.merge(fs, f, committedTo, existing -> {
              throw new io.volpool.io.BadRecordException("output file " + existing.getName(), "two inputs write it: each"
                  + " .npy output is named by its input file or its volume's id, so these must be unique");
            });
          }
          fs.delete(files, true);
        }
      }
      if (p.npyIn() && p.npyOut()) {
        emptyBatchOutputs(p, committedTo, bad.files());
      }
      CommittedOutput committed = CommittedOutput.count(committedTo, p.npyOut(), p.rowsOut(), p.conf());
      if (before != null) {
        committed = committed.minus(before);
      }
      // what this run's tasks counted, and what the kept tasks' files and plans hold
      CommittedOutput.check(committed, p.input(), CommittedOutput.TaskCounts.of(metrics).plus(kept.counts()), bad, p.npyIn(),
          p.npyOut(), p.rowsOut(), out.output().toString());
      if (p.outSpec().npyInPlace()) {
        // the ranges' markers were counted: the output holds the .npy files only
        io.volpool.io.Files2.fs(committedTo, p.conf()).delete(new Path(committedTo,
            io.volpool.io.npy.NpyPlanesInPlace.MARKERS), true);
      }
      Map<String, Object> continued = p.append() != null ? appendTotals(p, out, committed) : kept.describe(out, p.input());
      RunSummary summary = summary(s, out, metrics, p.pipeline(), p.input(), committed, p.outSpec().metadata(),
          (System.nanoTime() - t0) / 1e9, System.nanoTime() - tc, timeline, continued, bad);
      out.writeText(SUMMARY_FILE, summary.toJson());
      // last: the manifest says which input the output holds (an append's: the output's and this run's)
      out.writeText(io.volpool.job.commit.RunManifest.FILE, (p.append() != null ? p.append().after(p.manifest(), out.id())
          : p.manifest().withRun(out.id())).toJson());
      out.commit();
      published = true;
      return summary;
    } finally {
      if (!published) {
        bad.discard(p.conf());
      }
    }
  }

  /**
   * An appending run's account for its summary: the input files new, known and gone, and the output's totals once
   * this run is in (volumes, and rows and files), named apart from this run's own counts: the earlier total from the
   * output's summary (counted from its files for an output whose summary has none), plus this run's.
   */
  private static Map<String, Object> appendTotals(Planned p, OutputCommit out, CommittedOutput added) throws IOException {
    Map<String, Object> m = new LinkedHashMap<>(p.append().describe());
    long volumes = 0;
    long rows = 0;
    long files = 0;
    if (p.append().existing() != null) {
      FileSystem fs = io.volpool.io.Files2.fs(out.output(), p.conf());
      Path prev = new Path(out.output(), SUMMARY_FILE);
      com.fasterxml.jackson.databind.JsonNode a = null;
      if (fs.exists(prev)) {
        try (var in = fs.open(prev)) {
          a = new com.fasterxml.jackson.databind.ObjectMapper().readTree(in).path("appended");
        } catch (IOException e) {
          a = null;
        }
      }
      if (a != null && a.has("output_volumes_total") && !out.staging().equals(out.output())) {
        volumes = a.get("output_volumes_total").asLong();
        rows = a.path("output_rows_total").asLong();
        files = a.path("output_files_total").asLong();
      } else {
        // an output made before summaries kept totals (or on S3, where this run's files are in it already)
        CommittedOutput had = CommittedOutput.count(out.output(), p.npyOut(), p.rowsOut(), p.conf());
        if (out.staging().equals(out.output())) {
          had = had.minus(added);
        }
        volumes = had.volumes();
        rows = had.rows();
        files = had.files();
      }
    }
    m.put("output_volumes_total", volumes + added.volumes());
    m.put("output_rows_total", rows + added.rows());
    m.put("output_files_total", files + added.files());
    return m;
  }

  /**
   * The output of each .npy input file that holds a batch of no volumes ({@code [0, C, D, H, W]}): no task
   * writes it (it has no volume), so the driver does, a batch of none of the pipeline's output shape, as numpy
   * would save the empty result. Only files without an output are looked at (their header read).
   */
  private static void emptyBatchOutputs(Planned p, Path committedTo, java.util.Set<String> setAside) throws IOException {
    FileSystem outFs = io.volpool.io.Files2.fs(committedTo, p.conf());
    for (TaskPlan t : p.input().tasks()) {
      for (io.volpool.io.npy.NpyFileRef f : t.files()) {
        Path target = new Path(committedTo.toString() + "/" + f.relative());
        if (outFs.exists(target) || setAside.contains(f.path())) {
          continue;
        }
        Path in = new Path(f.path());
        FileSystem inFs = io.volpool.io.Files2.fs(in, p.conf());
        org.apache.hadoop.fs.FileStatus st = inFs.getFileStatus(in);
        io.volpool.format.NpyHeader h = InputPlanner.npyHeader(st, p.conf());
        long[] shape = h.shape();
        if (shape.length != 5 || shape[0] != 0) {
          continue; // a task failed to write it: the commit's count says so
        }
        io.volpool.op.VolumeShape o;
        try {
          o = p.pipeline().outputShape(new io.volpool.op.VolumeShape(Math.toIntExact(shape[1]), Math.toIntExact(shape[2]),
              Math.toIntExact(shape[3]), Math.toIntExact(shape[4])));
        } catch (IllegalArgumentException | ArithmeticException e) {
          throw new io.volpool.io.BadRecordException(f.path(), "a batch of no volumes of shape "
              + java.util.Arrays.toString(shape) + " cannot go through the pipeline: " + e.getMessage());
        }
        outFs.mkdirs(target.getParent());
        try (var os = outFs.create(target, false)) {
          os.write(io.volpool.format.Npy.header(new long[] {0, o.c(), o.d(), o.h(), o.w()}, p.pipeline().output()));
        }
      }
    }
  }

  /** Whether {@code dir} holds a Parquet data file (an output whose every record was set aside holds none). */
  private static boolean holdsParquet(Path dir, Configuration conf) throws IOException {
    FileSystem fs = io.volpool.io.Files2.fs(dir, conf);
    org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it = fs.listFiles(dir, true);
    while (it.hasNext()) {
      String n = it.next().getPath().getName();
      if (n.endsWith(".parquet") && !n.startsWith("_") && !n.startsWith(".")) {
        return true;
      }
    }
    return false;
  }

  /**
   * One RDD partition per task plan, with the hosts of its first file's data where the filesystem has
   * hosts; a task a resumed run keeps ({@code kept}) stays a partition of its number, with nothing to read,
   * so every task keeps the number (and the committed folder's name) it has in the plan.
   */
  private static JavaRDD<TaskPlan> tasks(SparkSession spark, InputPlanner.Plan plan, Configuration conf,
      java.util.Set<Integer> kept) throws IOException {
    List<Tuple2<TaskPlan, scala.collection.immutable.Seq<String>>> withHosts = new ArrayList<>();
    for (TaskPlan planned : plan.tasks()) {
      TaskPlan t = kept.contains(planned.index())
          ? new TaskPlan(planned.index(), List.of(), List.of(), List.of(), 0) : planned;
      withHosts.add(new Tuple2<>(t, scala.jdk.javaapi.CollectionConverters.asScala(hosts(t, conf)).toList()));
    }
    return spark.sparkContext().makeRDD(scala.jdk.javaapi.CollectionConverters.asScala(withHosts).toSeq(),
        ClassTag$.MODULE$.apply(TaskPlan.class)).toJavaRDD();
  }

  private static List<String> hosts(TaskPlan t, Configuration conf) throws IOException {
    String path = !t.splits().isEmpty() ? t.splits().get(0).path() : !t.files().isEmpty() ? t.files().get(0).path()
        : !t.ranges().isEmpty() ? t.ranges().get(0).file().path() : null;
    if (path == null) {
      return List.of();
    }
    Path p = new Path(path);
    FileSystem fs = p.getFileSystem(conf);
    if ("file".equals(fs.getScheme())) {
      return List.of();
    }
    long start = !t.splits().isEmpty() ? t.splits().get(0).start() : 0;
    var locs = fs.getFileBlockLocations(fs.getFileStatus(p), start, 1);
    List<String> hosts = new ArrayList<>();
    for (var l : locs) {
      for (String h : l.getHosts()) {
        if (!h.equals("localhost")) {
          hosts.add(h);
        }
      }
    }
    return hosts;
  }

  private static String codec(JobSettings s) {
    String c = s.outputCompression();
    return (c.equals("uncompressed") ? CompressionCodecName.UNCOMPRESSED
        : c.equals("lz4") ? CompressionCodecName.LZ4_RAW : CompressionCodecName.valueOf(c.toUpperCase(java.util.Locale.ROOT)))
        .name();
  }

  /** The layout of the input, from the first file's footer and the settings. */
  private static TensorLayout layout(JobSettings s, Path first, Configuration conf) throws IOException {
    ParquetInspector.Facts facts;
    try {
      facts = ParquetInspector.inspect(first, conf);
    } catch (IOException | RuntimeException e) {
      throw new CorruptInputException(first + ": not a readable Parquet file: " + e.getMessage());
    }
    String col = s.tensorColumn();
    VolumeShape fixed = s.tensorShape();
    if (fixed == null) {
      String c = col;
      if (c == null && facts.tensorShapes().size() == 1) {
        c = facts.tensorShapes().keySet().iterator().next();
      }
      fixed = c == null ? null : facts.tensorShapes().get(c);
    }
    TensorLayout layout;
    try {
      layout = TensorLayout.detect(facts.schema(), col, fixed);
    } catch (IllegalArgumentException e) {
      throw new SettingsException("input " + s.input() + " (" + first.getName() + "): " + e.getMessage(), e);
    }
    checkRescaleColumns(s, facts.schema(), first);
    return layout;
  }

  /** Each rescale column the settings name is a numeric column of the input (not a tensor column). */
  private static void checkRescaleColumns(JobSettings s, org.apache.parquet.schema.MessageType schema, Path first) {
    String[][] named = {{io.volpool.conf.VolpoolOptions.INPUT_RESCALE_SLOPE_COLUMN.key(), s.rescale().slopeColumn()},
        {io.volpool.conf.VolpoolOptions.INPUT_RESCALE_INTERCEPT_COLUMN.key(), s.rescale().interceptColumn()}};
    for (String[] n : named) {
      if (n[1] == null) {
        continue;
      }
      org.apache.parquet.schema.Type t = schema.containsField(n[1]) ? schema.getType(n[1]) : null;
      org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName p = t != null && t.isPrimitive()
          && !t.isRepetition(org.apache.parquet.schema.Type.Repetition.REPEATED)
          ? t.asPrimitiveType().getPrimitiveTypeName() : null;
      if (p != org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.DOUBLE
          && p != org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.FLOAT
          && p != org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.INT32
          && p != org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.INT64) {
        throw new SettingsException(n[0] + " names '" + n[1] + "', which " + (t == null ? "is not a column of" : "is not a"
            + " numeric column (int, long, float or double) of") + " input " + s.input() + " (" + first.getName() + ": "
            + schema.getFields().stream().map(f -> f.getName()).collect(java.util.stream.Collectors.joining(", ")) + ")");
      }
    }
  }

  /** A {@code file:} output on a cluster master lands on each executor's own disk: refuse it unless declared shared. */
  static void refuseLocalOutputOnCluster(String master, JobSettings s, Configuration conf) throws IOException {
    if (master == null || master.startsWith("local") || s.outputSharedFilesystem()) {
      return;
    }
    Path p = new Path(s.output());
    if ("file".equals(p.getFileSystem(conf).getScheme())) {
      throw new SettingsException(VolpoolOptions.OUTPUT.key() + "=" + s.output() + " is on the local filesystem but the"
          + " job runs on the cluster " + master + ": each executor would write to its own disk and the driver would"
          + " find nothing. Write to a shared filesystem (hdfs://, ...), or set "
          + VolpoolOptions.OUTPUT_SHARED_FS.key() + "=true if " + s.output() + " is the same shared mount on every host");
    }
  }

  private static RunSummary summary(JobSettings s, OutputCommit out, JobMetrics m, Pipeline p, InputPlanner.Plan plan,
      CommittedOutput committed, Map<String, String> provenance, double secs, long driverCommitNanos, Timeline timeline,
      Map<String, Object> continued, io.volpool.job.commit.SetAside bad) {
    TreeSet<String> backends = new TreeSet<>(m.backends().value());
    // the stored dtypes the tasks read, measured there (the footers were written before the run knew them all)
    provenance = new LinkedHashMap<>(provenance);
    provenance.put(ParquetBatchWriter.INPUT_DTYPES_KEY, String.join(",", new TreeSet<>(m.inputDtypes().value())));
    String backend = backends.isEmpty() ? "none (no input volumes)" : String.join(", ", backends);
    long[] ns = m.phaseNanos();
    ns[Phase.COMMIT.ordinal()] += driverCommitNanos;
    Map<String, Double> phases = new LinkedHashMap<>();
    for (Phase ph : Phase.values()) {
      // microseconds: a GPU kernel over a small batch takes far less than a millisecond
      phases.put(ph.label(), Math.round(ns[ph.ordinal()] / 1e3) / 1e6);
    }
    RunSummary.Run run = new RunSummary.Run(s.input(), s.inputFormat().toString(), out.output().toString(),
        s.outputFormat().toString(), p.describe(), backend);
    RunSummary.Counts counts = new RunSummary.Counts(plan.volumes() >= 0 ? plan.volumes() : m.volumesRead().value(),
        committed.volumes(), m.volumesRead().value(), committed.rows(), committed.files(), m.bytesIn().value(),
        m.bytesOut().value(), m.batches().value(), m.slabbedVolumes().value(), plan.volumes());
    // the budget the executors ran under, as they resolved it (an executor's heap, not the driver's)
    RunSummary.Resources resources = new RunSummary.Resources(secs, phases, m.budgetBytes().value(),
        m.peakBudgetBytes().value(), m.peakHeapBytes().value());
    return new RunSummary("succeeded", run, counts, resources, plan.skipped(), provenance, s.effective(), timeline,
        continued, bad);
  }
}
