package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.format.NpyArray;
import io.volpool.testing.Golden;
import io.volpool.testing.Tolerance;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The job end to end in local Spark on the pipeline_seed case, through every input and output layout. */
class JobEndToEndTest {
  static final Golden.Case SEED = Golden.get("pipeline_seed");

  static Map<String, String> seedConf(Path input, String format, Path out) {
    return SparkTests.conf("input", input.toString(), "input.format", format, "output", out.toString(),
        "pipeline", "fused,avgpool3d", "fused.weights", SEED.model().toString(), "fused.stride", "2", "fused.padding", "1",
        "fused.outputPadding", "0", "fused.poolKernelSize", "2");
  }

  static float[] floats(byte[] b) {
    float[] f = new float[b.length / 4];
    ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
    return f;
  }

  /** Expected output per id, from the case's expected_binary.parquet (written by pyarrow). */
  static Map<String, float[]> expectedById() {
    Map<String, float[]> m = new HashMap<>();
    for (Row r : SparkTests.spark().read().parquet(SEED.dir().resolve("expected_binary.parquet").toString()).collectAsList()) {
      m.put(r.getString(0), floats((byte[]) r.get(1)));
    }
    return m;
  }

  static void assertMatchesExpected(Path out) {
    Dataset<Row> d = SparkTests.spark().read().parquet(out.toString());
    assertThat(d.columns()).containsExactly("id", "shape", "dtype", "data");
    Map<String, float[]> exp = expectedById();
    List<Row> rows = d.collectAsList();
    assertThat(rows).hasSize(exp.size());
    for (Row r : rows) {
      assertThat(r.getList(1)).containsExactly(16, 8, 16, 16);
      assertThat(r.getString(2)).isEqualTo("float32");
      Tolerance.assertClose(floats((byte[]) r.get(3)), exp.get(r.getString(0)), "row " + r.getString(0));
    }
  }

  @Test
  void binaryParquetLayout(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(seedConf(SEED.dir().resolve("volumes_binary.parquet"), "parquet", out));
    assertThat(r.code()).as(r.err()).isZero();
    assertMatchesExpected(out);
    assertThat(out.resolve("_SUCCESS")).exists();
    JsonNode summary = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(summary.get("status").asText()).isEqualTo("succeeded");
    assertThat(summary.get("volumes_in").asLong()).isEqualTo(2);
    assertThat(summary.get("volumes_out").asLong()).isEqualTo(2);
    assertThat(summary.get("rows_in").asLong()).isEqualTo(2);
    assertThat(summary.get("rows_out").asLong()).isEqualTo(2);
    assertThat(summary.get("bytes_in").asLong()).isEqualTo(2L * 3 * 16 * 32 * 32 * 4);
    assertThat(summary.get("bytes_out").asLong()).isEqualTo(2L * 16 * 8 * 16 * 16 * 4);
    assertThat(summary.get("backend").asText()).startsWith(SparkTests.device().equals("gpu") ? "cuda:0" : "cpu");
    assertThat(summary.get("pipeline").asText()).isEqualTo("fused,avgpool3d");
    JsonNode timeline = summary.get("timeline");
    assertThat(timeline.get("first_task_committed_seconds").asDouble()).as("the first commit, measured").isPositive();
    assertThat(timeline.get("steady_volumes_per_second").isNull()).as("two volumes leave no steady window to measure:"
        + " null, not a number (" + timeline + ")").isTrue();
    assertThat(timeline.get("steady_window_seconds").isNull()).as(timeline.toString()).isTrue();
    assertThat(r.out()).contains("volpool run summary").contains("volumes       2 in, 2 out")
        .contains("backend       " + (SparkTests.device().equals("gpu") ? "cuda:0" : "cpu"));
    // nothing left behind but the run's status: no staging folder, owner file or lock beside the output
    try (var s = Files.list(tmp)) {
      assertThat(s.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("out", ".out.volpool-status.json");
    }
    assertThat(RunStatus.read(new org.apache.hadoop.fs.Path(tmp.resolve(".out.volpool-status.json").toUri()),
        new org.apache.hadoop.conf.Configuration()).get("status")).isEqualTo("succeeded");
  }

  @Test
  void aLocalRunWarmsTheJvmWhileItPlans(@TempDir Path tmp) throws Exception {
    // local mode: the driver is the executor, so the job starts the warm-up (Snappy's native library, the backend)
    // while it plans; without it every first task waits for Snappy's library to be extracted
    int before = io.volpool.exec.ExecutorRuntime.startsEnded();
    var conf = seedConf(SEED.dir().resolve("volumes_binary.parquet"), "parquet", tmp.resolve("out"));
    conf.put("spark.volpool.device", "auto");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isZero();
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (io.volpool.exec.ExecutorRuntime.startsEnded() == before && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(io.volpool.exec.ExecutorRuntime.startsEnded()).as("warm-ups ended during the run").isGreaterThan(before);
    assertThat(io.volpool.exec.ExecutorRuntime.lastStart()).containsPattern("Snappy [0-9.]+ native library loaded in [0-9]+ ms");
  }

  @Test
  void fixedShapeTensorLayoutTakesShapeFromArrowMetadata(@TempDir Path tmp) {
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(seedConf(SEED.dir().resolve("volumes_fixed_shape_tensor.parquet"), "parquet", out));
    assertThat(r.code()).as(r.err()).isZero();
    assertMatchesExpected(out);
  }

  @Test
  void npyInputAndOutput(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in/nested");
    Files.createDirectories(in);
    Files.copy(SEED.dir().resolve("input.npy"), in.resolve("batch.npy"));
    // the same two volumes as single-volume files, in a sub-folder
    NpyArray all = SEED.input();
    long vol = 3L * 16 * 32 * 32;
    float[] x = all.toFloatArray();
    for (int i = 0; i < 2; i++) {
      SparkTests.writeNpy(tmp.resolve("in/single/v" + i + ".npy"),
          NpyArray.of(new long[] {3, 16, 32, 32}, Arrays.copyOfRange(x, (int) (i * vol), (int) ((i + 1) * vol))));
    }
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(seedConf(tmp.resolve("in"), "npy", out));
    assertThat(r.code()).as(r.err()).isZero();
    NpyArray batch = SparkTests.readNpy(out.resolve("nested/batch.npy"));
    assertThat(batch.shape()).containsExactly(2, 16, 8, 16, 16);
    float[] exp = SEED.expected().toFloatArray();
    Tolerance.assertClose(batch.toFloatArray(), exp, "batch.npy");
    long ovol = 16L * 8 * 16 * 16;
    for (int i = 0; i < 2; i++) {
      NpyArray one = SparkTests.readNpy(out.resolve("single/v" + i + ".npy"));
      assertThat(one.shape()).as("leading dims kept: a single volume stays 4-d").containsExactly(16, 8, 16, 16);
      Tolerance.assertClose(one.toFloatArray(), Arrays.copyOfRange(exp, (int) (i * ovol), (int) ((i + 1) * ovol)), "v" + i);
    }
    assertThat(r.out()).contains("volumes       4 in, 4 out");
  }

  @Test
  void npyInputToParquetOutput(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Files.createDirectories(in);
    Files.copy(SEED.dir().resolve("input.npy"), in.resolve("seed.npy"));
    Path out = tmp.resolve("out");
    Map<String, String> conf = seedConf(in, "npy", out);
    conf.put("spark.volpool.output.format", "parquet");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isZero();
    List<Row> rows = SparkTests.spark().read().parquet(out.toString()).orderBy("id").collectAsList();
    assertThat(rows).extracting(row -> row.getString(0)).containsExactly("seed.npy[0]", "seed.npy[1]");
    float[] exp = SEED.expected().toFloatArray();
    Tolerance.assertClose(floats((byte[]) rows.get(1).get(3)), Arrays.copyOfRange(exp, 16 * 8 * 16 * 16, exp.length),
        "seed.npy[1]");
  }

  @Test
  void otherColumnsPassThroughAndIdentityCopies(@TempDir Path tmp) {
    Path src = tmp.resolve("src");
    SparkTests.spark().read().parquet(SEED.dir().resolve("volumes_binary.parquet").toString())
        .withColumn("label", functions.concat(functions.lit("L-"), functions.col("id")))
        .withColumn("weight", functions.lit(2.5))
        .write().parquet(src.toString());
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", src.toString(), "output", out.toString(),
        "pipeline", "identity"));
    assertThat(r.code()).as(r.err()).isZero();
    Dataset<Row> d = SparkTests.spark().read().parquet(out.toString());
    assertThat(d.columns()).containsExactly("id", "label", "weight", "shape", "dtype", "data");
    Map<String, byte[]> in = new HashMap<>();
    for (Row row : SparkTests.spark().read().parquet(src.toString()).collectAsList()) {
      in.put(row.getString(0), (byte[]) row.getAs("data"));
    }
    for (Row row : d.collectAsList()) {
      assertThat(row.getString(1)).isEqualTo("L-" + row.getString(0));
      assertThat(row.getDouble(2)).isEqualTo(2.5);
      assertThat((byte[]) row.getAs("data")).isEqualTo(in.get(row.getString(0)));
    }
  }

  @Test
  void existingOutputIsKeptUnlessOverwrite(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out");
    Files.createDirectories(out);
    Files.writeString(out.resolve("precious.txt"), "keep me");
    Map<String, String> conf = seedConf(SEED.dir().resolve("volumes_binary.parquet"), "parquet", out);
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("already exists").contains("spark.volpool.output.mode=overwrite");
    assertThat(out.resolve("precious.txt")).hasContent("keep me");
    conf.put("spark.volpool.output.mode", "overwrite");
    SparkTests.Result r2 = SparkTests.run(conf);
    assertThat(r2.code()).as(r2.err()).isZero();
    assertThat(out.resolve("precious.txt")).doesNotExist();
    assertMatchesExpected(out);
  }

  @org.junit.jupiter.params.ParameterizedTest(name = "{0}, parquet writer {1}")
  @org.junit.jupiter.params.provider.CsvSource({"snappy,v1", "zstd,v1", "gzip,v1", "lz4_raw,v1", "snappy,v2", "none,v2"})
  void everyCodecAndPageVersionSparkWritesIsRead(String codec, String version, @TempDir Path tmp) {
    Path src = tmp.resolve("src");
    SparkTests.spark().sparkContext().hadoopConfiguration().set("parquet.writer.version", version.equals("v2") ? "v2" : "v1");
    try {
      SparkTests.spark().read().parquet(SEED.dir().resolve("volumes_binary.parquet").toString()).repartition(1)
          .write().option("compression", codec).parquet(src.toString());
    } finally {
      SparkTests.spark().sparkContext().hadoopConfiguration().unset("parquet.writer.version");
    }
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(seedConf(src, "parquet", out));
    assertThat(r.code()).as(r.err()).isZero();
    assertMatchesExpected(out);
  }

  @Test
  void nestedAndNullPassThroughColumnsArriveUnchanged(@TempDir Path tmp) {
    Path src = tmp.resolve("src");
    SparkTests.spark().read().parquet(SEED.dir().resolve("volumes_binary.parquet").toString())
        .withColumn("meta", functions.struct(functions.lit(7).as("site"),
            functions.array(functions.lit("a"), functions.lit(null).cast("string")).as("tags")))
        .withColumn("scores", functions.map(functions.lit("q"), functions.lit(0.5)))
        .withColumn("maybe", functions.when(functions.col("id").endsWith("0"), functions.lit(1L)))
        .write().parquet(src.toString());
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", src.toString(), "output", out.toString(),
        "pipeline", "identity"));
    assertThat(r.code()).as(r.err()).isZero();
    Dataset<Row> in = SparkTests.spark().read().parquet(src.toString()).drop("shape", "dtype", "data");
    Dataset<Row> got = SparkTests.spark().read().parquet(out.toString()).drop("shape", "dtype", "data");
    assertThat(got.schema()).isEqualTo(in.schema());
    assertThat(got.orderBy("id").collectAsList()).isEqualTo(in.orderBy("id").collectAsList());
    assertThat(got.filter("maybe is null").count()).as("nulls stay null").isPositive();
  }

  @Test
  void theSummaryShowsWhereTheTimeWent(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(seedConf(SEED.dir().resolve("volumes_binary.parquet"), "parquet", out));
    assertThat(r.code()).as(r.err()).isZero();
    JsonNode phases = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile())
        .get("phase_seconds_summed_over_tasks");
    for (String p : List.of("read", "kernels", "encode", "write", "commit")) {
      assertThat(phases.get(p).asDouble()).as(p).isPositive();
    }
    assertThat(r.out()).contains("time by phase (summed over tasks):").contains("kernels");
  }

  @Test
  void everyOutputFooterRecordsWhatMadeIt(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(seedConf(SEED.dir().resolve("volumes_binary.parquet"), "parquet", out));
    assertThat(r.code()).as(r.err()).isZero();
    String sha = java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
        .digest(Files.readAllBytes(SEED.model())));
    try (var files = Files.list(out)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".parquet")).toList()) {
        try (var reader = org.apache.parquet.hadoop.ParquetFileReader.open(new org.apache.parquet.io.LocalInputFile(f))) {
          Map<String, String> kv = reader.getFooter().getFileMetaData().getKeyValueMetaData();
          assertThat(kv.get("volpool.version")).isNotBlank().isNotEqualTo("unknown");
          assertThat(kv.get("volpool.pipeline")).isEqualTo("fused(3->16, kernel=3, stride=2, padding=1, output_padding=0,"
              + " pool_kernel=2),avgpool3d(kernel=3, stride=2, padding=1, ceil_mode=false, count_include_pad=true)");
          assertThat(kv.get("volpool.model.sha256")).isEqualTo(sha);
          assertThat(kv.get("volpool.input")).isEqualTo(SEED.dir().resolve("volumes_binary.parquet").toString());
        }
      }
    }
    JsonNode prov = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile()).get("provenance");
    assertThat(prov.get("volpool.model.sha256").asText()).isEqualTo(sha);
  }
}
