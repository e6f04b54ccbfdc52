package io.volpool.job;

import io.volpool.format.SafeTensors;
import io.volpool.job.config.JobSettings;
import io.volpool.job.config.SettingsException;
import io.volpool.job.config.VolpoolOptions;
import io.volpool.job.io.NpyToRows;
import io.volpool.job.io.ParquetInspector;
import io.volpool.job.io.PathOverlap;
import io.volpool.job.io.StagedOutput;
import io.volpool.op.FusedModel;
import io.volpool.op.FusedOp;
import io.volpool.op.Pipeline;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import io.volpool.spark.JobMetrics;
import io.volpool.spark.NpyFileFunction;
import io.volpool.spark.ParquetTensorFunction;
import io.volpool.spark.RunSpec;
import io.volpool.spark.SerializableHadoopConf;
import io.volpool.spark.TensorLayout;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run of the volpool job on a given SparkSession: read (Parquet or .npy), run the pipeline in
 * {@code mapPartitions}, write into a staging directory, then commit and write the summary.
 * Stateless apart from the session, which the caller owns.
 */
public final class VolpoolJob {
  private static final Logger LOG = LoggerFactory.getLogger(VolpoolJob.class);
  /** Target bytes of one vectorized Parquet reader batch; large tensors get small batches. */
  static final long READER_BATCH_BYTES = 64L << 20;
  public static final String SUMMARY_FILE = "_volpool_summary.json";

  private VolpoolJob() {}

  /** Loads the weights and builds the pipeline the settings describe (driver side). */
  public static Pipeline pipeline(JobSettings s, Configuration conf) throws IOException {
    List<Stage> stages = new ArrayList<>();
    for (String name : s.stageNames()) {
      if (name.equals("fused")) {
        stages.add(loadFused(s, conf));
      } else {
        stages.add(s.avgPool());
      }
    }
    return new Pipeline(stages);
  }

  private static FusedOp loadFused(JobSettings s, Configuration conf) throws IOException {
    Path p = new Path(s.fusedWeights());
    FileSystem fs = p.getFileSystem(conf);
    if (!fs.exists(p)) {
      throw new SettingsException(VolpoolOptions.FUSED_WEIGHTS.key() + "=" + p + ": file not found");
    }
    byte[] bytes;
    try (InputStream in = fs.open(p)) {
      bytes = in.readAllBytes();
    }
    try {
      return FusedModel.load(SafeTensors.read(bytes, p.toString()), s.fusedParams());
    } catch (IllegalArgumentException e) {
      throw new SettingsException(VolpoolOptions.FUSED_WEIGHTS.key() + ": " + e.getMessage(), e);
    }
  }

  public static RunSummary run(SparkSession spark, JobSettings s) throws IOException {
    long t0 = System.nanoTime();
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    // Tensor payloads are large and random-looking: check page and row-group sizes after every row
    // (so 512 MiB rows never pile up in the writer), and keep Parquet from copying whole tensors into
    // min/max statistics or a dictionary (each would hold another copy of every value in memory).
    conf.setInt("parquet.page.size.row.check.min", 1);
    conf.setBoolean("parquet.column.statistics.enabled#" + TensorLayout.DATA, false);
    conf.setBoolean("parquet.enable.dictionary#" + TensorLayout.DATA, false);
    // before anything is read, written or deleted: the output may not be, contain or lie inside what the job reads
    PathOverlap.check(s.output(), VolpoolOptions.OUTPUT.key(), s.input(), VolpoolOptions.INPUT.key(), conf);
    if (s.stageNames().contains("fused")) {
      PathOverlap.check(s.output(), VolpoolOptions.OUTPUT.key(), s.fusedWeights(), VolpoolOptions.FUSED_WEIGHTS.key(), conf);
    }
    Pipeline pipeline = pipeline(s, conf);
    RunSpec spec = new RunSpec(pipeline, s.device(), s.batchSize(), s.cpuThreads(), s.gpuTasksPerDevice());
    Path inputPath = new Path(s.input());
    FileSystem inFs = inputPath.getFileSystem(conf);
    if (!inFs.exists(inputPath)) {
      throw new SettingsException(VolpoolOptions.INPUT.key() + "=" + s.input() + ": path not found");
    }
    String inputRoot = inFs.makeQualified(inputPath).toString();
    StagedOutput out = StagedOutput.prepare(s.output(), s.overwrite(), conf);
    JobMetrics metrics = new JobMetrics(spark.sparkContext().longAccumulator("volumesIn"),
        spark.sparkContext().longAccumulator("volumesOut"), spark.sparkContext().longAccumulator("bytesIn"),
        spark.sparkContext().longAccumulator("bytesOut"), spark.sparkContext().longAccumulator("batches"),
        spark.sparkContext().collectionAccumulator("backends"));
    LOG.info("volpool: {} -> {} with pipeline {} (device={}), staging in {}", s.input(), out.output(),
        pipeline.describe(), s.device(), out.staging());
    try {
      if (s.inputFormat().equals("npy") && s.outputFormat().equals("npy")) {
        writeNpyFiles(spark, s, spec, inputRoot, out, metrics);
      } else {
        Rows in = s.inputFormat().equals("npy") ? npyRows(spark, s, inputRoot) : parquetRows(spark, s, conf);
        Dataset<Row> result = in.rows().mapPartitions(new ParquetTensorFunction(spec, in.layout(), metrics),
            Encoders.row(in.layout().outputSchema()));
        result.write().option("compression", s.outputCompression()).parquet(out.staging().toString());
      }
      RunSummary summary = summary(s, out, metrics, pipeline, (System.nanoTime() - t0) / 1e9);
      out.writeText(SUMMARY_FILE, summary.toJson());
      out.commit();
      return summary;
    } catch (Throwable e) {
      // Spark's own exceptions are checked ones thrown from Scala: catch everything
      out.abort();
      throw e;
    }
  }

  /** .npy in, .npy out: one output file per input file, written by the tasks into the staging directory. */
  private static void writeNpyFiles(SparkSession spark, JobSettings s, RunSpec spec, String inputRoot,
      StagedOutput out, JobMetrics metrics) throws IOException {
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    NpyFileFunction fn = new NpyFileFunction(spec, inputRoot, out.staging().toString(),
        new SerializableHadoopConf(conf), metrics);
    List<Row> results = npyFiles(spark, s.input()).mapPartitions(fn, Encoders.row(NpyFileFunction.RESULT_SCHEMA))
        .collectAsList();
    LOG.info("volpool: wrote {} .npy files", results.size());
    FileSystem ofs = out.staging().getFileSystem(conf);
    ofs.mkdirs(out.staging());
    ofs.create(new Path(out.staging(), "_SUCCESS"), true).close();
  }

  /** Input rows and where their tensors are. */
  private record Rows(Dataset<Row> rows, TensorLayout layout) {}

  /** .npy files as binary-layout rows, one per volume. */
  private static Rows npyRows(SparkSession spark, JobSettings s, String inputRoot) {
    Dataset<Row> rows = npyFiles(spark, s.input()).flatMap(new NpyToRows(inputRoot), Encoders.row(NpyToRows.SCHEMA));
    return new Rows(rows, TensorLayout.detect(NpyToRows.SCHEMA, null, null));
  }

  /**
   * Parquet rows, with the reader's batch size set from the largest row in the footers and the
   * tensor layout detected (a fixed-shape tensor column's shape from the settings or ARROW:schema).
   */
  private static Rows parquetRows(SparkSession spark, JobSettings s, Configuration conf) throws IOException {
    ParquetInspector.Facts facts = ParquetInspector.inspect(s.input(), conf);
    if (facts.maxRowBytes() > 0) {
      long batch = Math.max(1, Math.min(4096, READER_BATCH_BYTES / facts.maxRowBytes()));
      spark.conf().set("spark.sql.parquet.columnarReaderBatchSize", String.valueOf(batch));
      LOG.info("volpool: largest input row about {} bytes; Parquet reader batches of {} rows", facts.maxRowBytes(),
          batch);
    }
    Dataset<Row> rows = spark.read().parquet(s.input());
    String col = s.tensorColumn();
    VolumeShape fixed = s.tensorShape();
    if (fixed == null) {
      String c = col;
      if (c == null && facts.tensorShapes().size() == 1) {
        c = facts.tensorShapes().keySet().iterator().next();
      }
      fixed = c == null ? null : facts.tensorShapes().get(c);
    }
    try {
      return new Rows(rows, TensorLayout.detect(rows.schema(), col, fixed));
    } catch (IllegalArgumentException e) {
      throw new SettingsException("input " + s.input() + ": " + e.getMessage(), e);
    }
  }

  private static Dataset<Row> npyFiles(SparkSession spark, String input) {
    return spark.read().format("binaryFile").option("pathGlobFilter", "*.npy").option("recursiveFileLookup", "true")
        .load(input).select("path", "content");
  }

  private static RunSummary summary(JobSettings s, StagedOutput out, JobMetrics m, Pipeline p, double secs) {
    TreeSet<String> backends = new TreeSet<>(m.backends().value());
    String backend = backends.isEmpty() ? "none (no input volumes)" : String.join(", ", backends);
    return new RunSummary("succeeded", s.input(), s.inputFormat(), out.output().toString(), s.outputFormat(),
        p.describe(), backend, m.volumesIn().value(), m.volumesOut().value(), m.bytesIn().value(), m.bytesOut().value(),
        m.batches().value(), secs, s.effective());
  }
}
