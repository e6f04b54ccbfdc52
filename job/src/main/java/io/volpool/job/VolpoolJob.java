package io.volpool.job;

import io.volpool.conf.Device;
import io.volpool.conf.FileFormat;
import io.volpool.conf.OutputLayout;
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
        s.outputRowBytes(), outputRows, s.rescale());
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

  /**
   * Runs the job: plans it (settings checked against the input, tasks from the listing and footers),
   * runs its tasks into the output's staging, and publishes what they committed once it is checked.
   * After any failure the staging is removed and the output is left as it was.
   */
  public static RunSummary run(SparkSession spark, JobSettings s) throws IOException {
    long t0 = System.nanoTime();
    Planned p = plan(spark, s);
    OutputCommit out = OutputCommit.prepare(s.output(), s.overwrite(), p.conf());
    JobMetrics metrics = JobMetrics.register(spark.sparkContext());
    LOG.info("volpool: {} -> {} with pipeline {} (device={}), {} input file(s), {} task(s), staging in {}", s.input(),
        out.output(), describe(p.pipeline()), s.device(), p.input().files(), p.input().tasks().size(), out.staging());
    try (Progress progress = new Progress(spark.sparkContext(), metrics, p.input().progressTotal(),
        p.planeRows() ? "rows" : "volumes", t0);
        ResourceWatch watch = !p.local() && !p.input().tasks().isEmpty()
            ? new ResourceWatch(spark.sparkContext(), s.resourceTimeoutSeconds()) : null) {
      // the Spark UI and the history server name the job by what it does, not by Spark's writer
      spark.sparkContext().setJobGroup("volpool", "volpool " + describe(p.pipeline()) + ": " + s.input() + " -> "
          + out.output() + " (" + p.input().tasks().size() + " tasks)", false);
      // and its stage by the pipeline, not "runJob at SparkHadoopWriter.scala:85"
      spark.sparkContext().setCallSite("volpool " + p.pipeline().describe());
      Configuration jobConf;
      try {
        jobConf = runTasks(spark, p, out, metrics, watch);
      } finally {
        spark.sparkContext().clearJobGroup();
        spark.sparkContext().clearCallSite();
      }
      LOG.info(progress.finalLine());
      return publish(s, p, out, jobConf, metrics, progress.timeline(), t0);
    } catch (Throwable e) {
      // Spark's own exceptions are checked ones thrown from Scala: catch everything
      out.abort();
      throw e;
    }
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
      LocalGpuCheck gpuCheck) {}

  /** Checks the settings against the input and plans the tasks; in local mode also starts the executor's warm-up. */
  private static Planned plan(SparkSession spark, JobSettings s) throws IOException {
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    OutputCommit.requireSafe(s.output(), conf);
    // before anything is read, written or deleted: the output may not be, contain or lie inside what the job reads
    PathOverlap.check(s.output(), VolpoolOptions.OUTPUT.key(), s.input(), VolpoolOptions.INPUT.key(), conf);
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
    InputPlanner.Plan plan = npyIn ? InputPlanner.npy(s.input(), conf, maxPartition, openCost, cores)
        : InputPlanner.parquet(s.input(), conf, maxPartition, openCost, cores);
    if (plan.files() == 0) {
      throw new NoInputException(s.input(), npyIn ? ".npy" : "Parquet", plan.skipped());
    }
    if (!plan.skipped().isEmpty()) {
      LOG.warn("volpool: {} file(s) in {} are not input and were skipped: {}", plan.skipped().size(), s.input(),
          String.join(", ", plan.skipped().subList(0, Math.min(20, plan.skipped().size())))
              + (plan.skipped().size() > 20 ? ", ..." : ""));
    }
    TensorLayout layout = npyIn || plan.first() == null ? null : layout(s, plan.first(), conf);
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
    if (planeRows) {
      // volumes stored across rows: the rows of each volume are found and checked on the driver
      // written across rows (Parquet), a volume larger than a task runs as ranges of its planes in several tasks
      plan = PlaneRowPlanner.plan(s.input(), layout, conf, maxPartition, openCost, cores,
          s.outputFormat() == FileFormat.NPY || !s.spreadVolumes() ? null : pipeline);
      long entries = plan.tasks().stream().mapToLong(t -> t.volumes().size()).sum();
      LOG.info("volpool: {} input rows hold {} volume(s) stored across rows; they run in slabs along D{}",
          plan.rows(), plan.volumes(), entries > plan.volumes() ? ", the largest as " + entries + " ranges of output"
              + " planes in separate tasks" : "");
    }
    boolean npyOut = s.outputFormat() == FileFormat.NPY;
    if (npyOut && !npyIn && !planeRows) {
      throw new SettingsException(VolpoolOptions.OUTPUT_FORMAT.key() + "=npy needs " + VolpoolOptions.INPUT_FORMAT.key()
          + "=npy (one output file per input file) or Parquet input of volumes stored across rows (one output file per"
          + " volume, named <id>.npy); " + s.input() + " holds one volume per row: write Parquet output");
    }
    if (planeRows && s.outputLayout() == OutputLayout.VOLUME) {
      throw new SettingsException(VolpoolOptions.OUTPUT_LAYOUT.key() + "=volume: the input holds volumes stored across rows"
          + " (it has d0/d1 columns), which may be larger than one row can hold; they are written across rows (rows or auto)");
    }
    // across rows when the input is, or when asked: then a volume larger than output.rowBytes takes several rows
    boolean rowsOut = !npyOut && (planeRows || s.outputLayout() == OutputLayout.ROWS);
    if (rowsOut && !planeRows && !npyIn) {
      PlaneRowPlanner.requireUniqueIds(s.input(), layout, conf);
    }
    OutputSpec outSpec = new OutputSpec(s.outputFormat(),
        (layout == null ? TensorLayout.npyOutputSchema(rowsOut) : layout.outputSchema(rowsOut)).toString(),
        layout == null ? List.of() : layout.passthrough(), codec(s), ROW_GROUP_BYTES,
        provenance(s, pipeline, files), s.outputRowBytes());
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
    return new Planned(conf, local, pipeline, plan, layout, npyIn, npyOut, planeRows, rowsOut, outSpec, spec, gpuCheck);
  }

  /** Runs every task, each writing its committed files where {@code out} stages them; returns the job's configuration. */
  private static Configuration runTasks(SparkSession spark, Planned p, OutputCommit out, JobMetrics metrics,
      ResourceWatch watch) throws IOException {
    Configuration conf = p.conf();
    JavaPairRDD<Void, BatchRunner.Finished> batches = tasks(spark, p.input(), conf)
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
      Timeline timeline, long t0) throws IOException {
    if (p.gpuCheck() != null) {
      p.gpuCheck().require();
    }
    long tc = System.nanoTime();
    // the committed files, where they can be counted (on S3: completed, in the output)
    Path committedTo = out.publish(jobConf);
    if (!p.npyOut() && p.input().rows() == 0) {
      // no volumes: one file of the output's schema and no rows, as Spark writes for an empty DataFrame, so a
      // reader of the output (spark.read.parquet) still finds its schema
      new ParquetBatchWriter(new Path(committedTo, "part-00000-empty.parquet"), p.outSpec(), p.conf(),
          new io.volpool.backend.PhaseTimes()).close();
    }
    CommittedOutput committed = CommittedOutput.count(committedTo, p.npyOut(), p.rowsOut(), p.conf());
    CommittedOutput.check(committed, p.input(), metrics, p.npyIn(), p.npyOut(), p.rowsOut(), out.output().toString());
    RunSummary summary = summary(s, out, metrics, p.pipeline(), p.input(), committed, p.outSpec().metadata(),
        (System.nanoTime() - t0) / 1e9, System.nanoTime() - tc, p.spec(), timeline);
    out.writeText(SUMMARY_FILE, summary.toJson());
    out.commit();
    return summary;
  }

  /** One RDD partition per task plan, with the hosts of its first file's data where the filesystem has hosts. */
  private static JavaRDD<TaskPlan> tasks(SparkSession spark, InputPlanner.Plan plan, Configuration conf)
      throws IOException {
    List<Tuple2<TaskPlan, scala.collection.immutable.Seq<String>>> withHosts = new ArrayList<>();
    for (TaskPlan t : plan.tasks()) {
      withHosts.add(new Tuple2<>(t, scala.jdk.javaapi.CollectionConverters.asScala(hosts(t, conf)).toList()));
    }
    return spark.sparkContext().makeRDD(scala.jdk.javaapi.CollectionConverters.asScala(withHosts).toSeq(),
        ClassTag$.MODULE$.apply(TaskPlan.class)).toJavaRDD();
  }

  private static List<String> hosts(TaskPlan t, Configuration conf) throws IOException {
    String path = !t.splits().isEmpty() ? t.splits().get(0).path() : t.files().isEmpty() ? null : t.files().get(0).path();
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
      CommittedOutput committed, Map<String, String> provenance, double secs, long driverCommitNanos, RunSpec spec,
      Timeline timeline) {
    TreeSet<String> backends = new TreeSet<>(m.backends().value());
    // the stored dtypes the tasks read, measured there (the footers were written before the run knew them all)
    provenance = new LinkedHashMap<>(provenance);
    provenance.put("volpool.input.dtypes", String.join(",", new TreeSet<>(m.inputDtypes().value())));
    String backend = backends.isEmpty() ? "none (no input volumes)" : String.join(", ", backends);
    long[] ns = m.phaseNanos();
    ns[Phase.COMMIT.ordinal()] += driverCommitNanos;
    Map<String, Double> phases = new LinkedHashMap<>();
    for (Phase ph : Phase.values()) {
      // microseconds: a GPU kernel over a small batch takes far less than a millisecond
      phases.put(ph.label(), Math.round(ns[ph.ordinal()] / 1e3) / 1e6);
    }
    return new RunSummary("succeeded", s.input(), s.inputFormat().toString(), out.output().toString(), s.outputFormat().toString(),
        p.describe(), backend, plan.volumes() >= 0 ? plan.volumes() : m.volumesRead().value(), committed.volumes(),
        m.volumesRead().value(), committed.rows(), committed.files(), m.bytesIn().value(),
        m.bytesOut().value(), m.batches().value(), m.slabbedVolumes().value(), plan.volumes(), secs, phases,
            io.volpool.memory.MemoryBudget.bytesFor(spec.memoryBudget()), m.peakBudgetBytes().value(),
        m.peakHeapBytes().value(), plan.skipped(), provenance, s.effective(), timeline);
  }
}
