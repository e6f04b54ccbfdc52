package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.volpool.format.NpyArray;
import io.volpool.testing.Golden;
import io.volpool.testing.Tolerance;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The DataFrame API and the SQL functions, used as an application would, on every golden case. */
class VolpoolApiTest {
  static Stream<Golden.Case> cases() {
    return Golden.cases().stream();
  }

  /** The case's input volumes as binary-layout rows, with an extra column that must pass through. */
  static Dataset<Row> rows(Golden.Case c) {
    NpyArray a = c.input();
    long[] s = a.shape();
    int per = (int) (s[1] * s[2] * s[3] * s[4]);
    float[] x = a.toFloatArray();
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < s[0]; i++) {
      ByteBuffer b = ByteBuffer.allocate(per * 4).order(ByteOrder.LITTLE_ENDIAN);
      b.asFloatBuffer().put(x, i * per, per);
      rows.add(RowFactory.create("v" + i, "tag-" + i, SampleData.seq((int) s[1], (int) s[2], (int) s[3], (int) s[4]),
          "float32", b.array()));
    }
    return SparkTests.spark().createDataFrame(rows, new org.apache.spark.sql.types.StructType().add("id", "string")
        .add("tag", "string")
        .add("shape", org.apache.spark.sql.types.DataTypes.createArrayType(org.apache.spark.sql.types.DataTypes.IntegerType))
        .add("dtype", "string").add("data", "binary"));
  }

  /**
   * The same rows as {@link #rows}, written as Parquet and read back: a file-backed table, whose
   * plan runs in tasks on executors (an in-memory one is evaluated on the driver), so the functions'
   * closures are serialized as on a cluster.
   */
  static Dataset<Row> parquetRows(Golden.Case c) {
    try {
      java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("volpool-api-" + c.name());
      String path = dir.resolve("vols.parquet").toString();
      rows(c).repartition(2).write().parquet(path);
      return SparkTests.spark().read().parquet(path);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The job's settings of the case: transform takes the same keys. */
  static Map<String, String> options(Golden.Case c) {
    return SparkTests.caseSettings(c);
  }

  static float[] floats(byte[] b) {
    float[] f = new float[b.length / 4];
    ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
    return f;
  }

  static void assertMatches(Golden.Case c, List<Row> got, int dataCol) {
    float[] exp = c.expected().toFloatArray();
    long[] es = c.expected().shape();
    int per = (int) (es[1] * es[2] * es[3] * es[4]);
    assertThat(got).hasSize((int) es[0]);
    for (Row r : got) {
      int i = Integer.parseInt(r.getString(0).substring(1));
      Tolerance.assertClose(floats((byte[]) r.get(dataCol)), Arrays.copyOfRange(exp, i * per, (i + 1) * per), c + " " + r.get(0));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void transformReproducesGoldenCase(Golden.Case c) {
    transformReproduces(c, rows(c));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void transformReproducesGoldenCaseOnAParquetTable(Golden.Case c) {
    transformReproduces(c, parquetRows(c));
  }

  private void transformReproduces(Golden.Case c, Dataset<Row> in) {
    Dataset<Row> out = Volpool.transform(in, options(c));
    assertThat(out.columns()).containsExactly("id", "tag", "shape", "dtype", "data");
    List<Row> got = out.collectAsList();
    for (Row r : got) {
      assertThat(r.getString(1)).isEqualTo("tag-" + r.getString(0).substring(1));
      long[] es = c.expected().shape();
      assertThat(r.getList(2)).containsExactly((int) es[1], (int) es[2], (int) es[3], (int) es[4]);
    }
    assertMatches(c, got, 4);
  }

  @Test
  void theTransformIsAnOrdinaryDataFrame() {
    Golden.Case c = Golden.get("pipeline_seed");
    Dataset<Row> out = Volpool.transform(rows(c).filter("id = 'v1'"), options(c));
    Dataset<Row> labels = SparkTests.spark().createDataFrame(List.of(RowFactory.create("v1", "label-1")),
        new org.apache.spark.sql.types.StructType().add("id", "string").add("label", "string"));
    List<Row> joined = out.join(labels, "id").select("id", "label", "data").collectAsList();
    assertThat(joined).hasSize(1);
    assertThat(joined.get(0).getString(1)).isEqualTo("label-1");
    out.write().mode("overwrite").saveAsTable("volpool_api_test_pooled");
    assertThat(SparkTests.spark().table("volpool_api_test_pooled").count()).isEqualTo(1);
    SparkTests.spark().sql("DROP TABLE volpool_api_test_pooled");
  }

  @Test
  void sqlFunctionsReproduceGoldenCases() {
    sqlFunctionsReproduceGoldenCasesOn(VolpoolApiTest::rows);
  }

  @Test
  void sqlFunctionsReproduceGoldenCasesOnParquetTables() {
    sqlFunctionsReproduceGoldenCasesOn(VolpoolApiTest::parquetRows);
  }

  @Test
  void callUdfRunsEveryFunctionOnAParquetTable() {
    Volpool.register(SparkTests.spark());
    Golden.Case c = Golden.get("avgpool_seed_small");
    Dataset<Row> t = parquetRows(c);
    long n = t.count();
    org.apache.spark.sql.Column d = functions.col("data");
    org.apache.spark.sql.Column s = functions.col("shape");
    org.apache.spark.sql.Column dt = functions.col("dtype");
    org.apache.spark.sql.Column three = functions.lit(3);
    org.apache.spark.sql.Column two = functions.lit(2);
    org.apache.spark.sql.Column one = functions.lit(1);
    Map<String, org.apache.spark.sql.Column> calls = new java.util.LinkedHashMap<>();
    calls.put("volpool_avgpool3d", functions.callUDF("volpool_avgpool3d", d, s, dt, three, two, one));
    calls.put("volpool_avgpool3d_full", functions.callUDF("volpool_avgpool3d_full", d, s, dt, three, two, one,
        functions.lit(false), functions.lit(true)));
    calls.put("volpool_maxpool3d", functions.callUDF("volpool_maxpool3d", d, s, dt, three, two, one));
    calls.put("volpool_maxpool3d_full", functions.callUDF("volpool_maxpool3d_full", d, s, dt, three, two, one,
        functions.lit(1), functions.lit(false)));
    Golden.Case fused = Golden.get("fused_seed");
    calls.put("volpool_fused", null);
    assertThat(calls.keySet()).as("every registered function is called here")
        .containsExactlyInAnyOrderElementsOf(io.volpool.ops.Operators.sqlFunctions().stream()
            .map(io.volpool.op.SqlFunction::name).toList());
    for (var e : calls.entrySet()) {
      Dataset<Row> table = e.getValue() == null ? parquetRows(fused) : t;
      org.apache.spark.sql.Column call = e.getValue() == null
          ? functions.callUDF("volpool_fused", d, s, dt, functions.lit(fused.model().toString())) : e.getValue();
      List<Row> got = table.select(functions.col("id"), call.getField("shape"), call.getField("data")).collectAsList();
      assertThat(got).as(e.getKey()).hasSize((int) (e.getValue() == null ? table.count() : n));
      for (Row r : got) {
        assertThat(r.getList(1)).as(e.getKey()).hasSize(4);
        assertThat(((byte[]) r.get(2)).length).as(e.getKey()).isPositive();
      }
    }
  }

  @Test
  void transformWidensStoredDtypesAndRescalesFromEachRowsColumns(@org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp)
      throws Exception {
    Golden.Case c = DtypeJobTest.rescaleCase("rescale_uint16_columns_avgpool");
    Dataset<Row> table = SparkTests.spark().read().parquet(DtypeJobTest.rescaleTable(c, tmp, false).toString());
    Map<String, String> opts = new java.util.HashMap<>(options(c));
    opts.put("input.rescale.slopeColumn", "RescaleSlope");
    opts.put("input.rescale.interceptColumn", "RescaleIntercept");
    List<Row> got = Volpool.transform(table, opts).orderBy("id").collectAsList();
    float[] exp = c.expected().toFloatArray();
    int per = exp.length / 3;
    assertThat(got).hasSize(3);
    for (int i = 0; i < 3; i++) {
      assertThat(got.get(i).<String>getAs("dtype")).isEqualTo("float32");
      Tolerance.assertClose(floats(got.get(i).getAs("data")), Arrays.copyOfRange(exp, i * per, (i + 1) * per),
          c + " volume " + i);
    }
  }

  /**
   * The transform on a file-backed table whose tensors are fixed_shape_tensor lists of int8, uint8,
   * int16, uint16, int32 or double (as Spark reads them: tinyint, smallint, int, double arrays; Spark
   * does not read Parquet's float16): PyTorch's result of each value as float32.
   */
  @Test
  void transformTakesListColumnsOfEveryNumericTypeSparkReads(@org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp)
      throws Exception {
    int seen = 0;
    for (Golden.Case c : DtypeJobTest.listCases().toList()) {
      if (c.json().get("input_dtype").asText().equals("float16")) {
        continue;
      }
      java.nio.file.Path in = DtypeJobTest.listTable(c, tmp.resolve(c.name()), true);
      Dataset<Row> table = SparkTests.spark().read().parquet(in.toString());
      long[] s = DtypeJobTest.header(c).shape();
      Map<String, String> opts = new java.util.HashMap<>(options(c));
      opts.put("input.tensorShape", s[1] + "," + s[2] + "," + s[3] + "," + s[4]);
      List<Row> got = Volpool.transform(table, opts).orderBy("id").collectAsList();
      float[] exp = c.expected().toFloatArray();
      int n = (int) s[0];
      int per = exp.length / n;
      assertThat(got).as(c.name()).hasSize(n);
      for (int i = 0; i < n; i++) {
        Tolerance.assertClose(floats(got.get(i).getAs("data")), Arrays.copyOfRange(exp, i * per, (i + 1) * per),
            c.name() + " volume " + i);
      }
      seen++;
    }
    assertThat(seen).as("list cases run").isGreaterThanOrEqualTo(6);
  }

  private void sqlFunctionsReproduceGoldenCasesOn(java.util.function.Function<Golden.Case, Dataset<Row>> table) {
    Volpool.register(SparkTests.spark());
    for (Golden.Case c : Golden.cases()) {
      table.apply(c).createOrReplaceTempView("vols");
      String call = sqlCall(c);
      if (call == null) {
        continue;
      }
      List<Row> got = SparkTests.spark().sql("SELECT id, " + call + ".data FROM vols").collectAsList();
      assertMatches(c, got, 1);
    }
    Golden.Case seed = Golden.get("avgpool_seed_small");
    table.apply(seed).createOrReplaceTempView("vols");
    assertThat(SparkTests.spark().sql("SELECT volpool_avgpool3d(data, shape, dtype, 3, 2, 1).shape FROM vols").first().getList(0))
        .as("the issue's example call").hasSize(4);
    assertThat(SparkTests.spark().sql("SELECT volpool_maxpool3d(data, shape, dtype, 3, 2, 1).shape FROM vols").first().getList(0))
        .as("maxpool3d's short form").hasSize(4);
  }

  /** The SQL call of golden case {@code c} on the binary layout's columns, or null for a case SQL cannot run. */
  private static String sqlCall(Golden.Case c) {
    if (c.op().equals("avgpool3d")) {
      JsonNode a = c.avgParams();
      return "volpool_avgpool3d_full(data, shape, dtype, " + a.get("kernel_size") + ", " + a.get("stride") + ", "
          + a.get("padding") + ", " + a.get("ceil_mode") + ", " + a.get("count_include_pad") + ")";
    } else if (c.op().equals("maxpool3d")) {
      JsonNode m = c.maxParams();
      return "volpool_maxpool3d_full(data, shape, dtype, " + m.get("kernel_size") + ", " + m.get("stride") + ", "
          + m.get("padding") + ", " + m.get("dilation") + ", " + m.get("ceil_mode") + ")";
    } else if (c.name().equals("fused_seed")) {
      return "volpool_fused(data, shape, dtype, '" + c.model() + "')";
    }
    return null;
  }

  /** A dtype case's volumes as rows of the binary layout, each holding its stored bytes and the case's dtype. */
  private static Dataset<Row> storedRows(Golden.Case c) {
    byte[] file;
    try {
      file = java.nio.file.Files.readAllBytes(c.dir().resolve("input.npy"));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    io.volpool.format.NpyHeader h = DtypeJobTest.header(c);
    long[] s = h.shape();
    int per = (int) (h.numel() / s[0] * h.itemSize());
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < s[0]; i++) {
      byte[] data = Arrays.copyOfRange(file, (int) h.dataOffset() + i * per, (int) h.dataOffset() + (i + 1) * per);
      rows.add(RowFactory.create("v" + i, "tag-" + i, SampleData.seq((int) s[1], (int) s[2], (int) s[3], (int) s[4]),
          c.json().get("input_dtype").asText(), data));
    }
    return SparkTests.spark().createDataFrame(rows, rows(Golden.get("avgpool_seed_small")).schema());
  }

  @Test
  void sqlFunctionsTakeEveryStoredDtypeTheRescaleAndTheOutputDtypeAsTransformDoes() {
    var spark = SparkTests.spark();
    Volpool.register(spark);
    int seen = 0;
    Golden.Case int16 = null;
    for (Golden.Case c : Golden.cases()) {
      if (!c.json().has("input_dtype") || sqlCall(c) == null) {
        continue;
      }
      storedRows(c).createOrReplaceTempView("vols");
      assertMatches(c, spark.sql("SELECT id, " + sqlCall(c) + ".data FROM vols").collectAsList(), 1);
      if (c.json().get("input_dtype").asText().equals("int16") && c.op().equals("avgpool3d")) {
        int16 = c;
      }
      seen++;
    }
    assertThat(seen).as("dtype cases run through SQL").isGreaterThanOrEqualTo(6);
    assertThat(int16).as("an int16 avgpool3d case").isNotNull();
    // the session's rescale and output dtype, as transform takes them: the same bytes, row for row
    spark.conf().set(io.volpool.conf.VolpoolOptions.INPUT_RESCALE_SLOPE.key(), "0.37");
    spark.conf().set(io.volpool.conf.VolpoolOptions.INPUT_RESCALE_INTERCEPT.key(), "-12.5");
    spark.conf().set(io.volpool.conf.VolpoolOptions.OUTPUT_DTYPE.key(), "float16");
    try {
      Volpool.register(spark);
      Dataset<Row> t = storedRows(int16);
      t.createOrReplaceTempView("vols");
      JsonNode a = int16.avgParams();
      List<Row> sql = spark.sql("SELECT id, r.dtype, r.data, r.shape FROM (SELECT id, " + sqlCall(int16)
          + " AS r FROM vols) ORDER BY id").collectAsList();
      List<Row> tr = Volpool.transform(t, Map.of("pipeline", "avgpool3d", "device", "cpu",
          "avgpool3d.kernelSize", a.get("kernel_size").asText(), "avgpool3d.stride", a.get("stride").asText(),
          "avgpool3d.padding", a.get("padding").asText(), "avgpool3d.ceilMode", a.get("ceil_mode").asText(),
          "avgpool3d.countIncludePad", a.get("count_include_pad").asText())).orderBy("id").collectAsList();
      assertThat(sql).hasSameSizeAs(tr).isNotEmpty();
      for (int i = 0; i < sql.size(); i++) {
        assertThat(sql.get(i).getString(1)).isEqualTo("float16").isEqualTo(tr.get(i).<String>getAs("dtype"));
        assertThat((byte[]) sql.get(i).get(2)).as("row " + sql.get(i).get(0)).isEqualTo(tr.get(i).<byte[]>getAs("data"));
        assertThat(sql.get(i).getList(3)).isEqualTo(tr.get(i).getList(tr.get(i).fieldIndex("shape")));
      }
      // the rescale really applies: register's options over the session's settings give other values
      Volpool.register(spark, Map.of("input.rescale.slope", "1", "input.rescale.intercept", "0"));
      Row plain = spark.sql("SELECT id, r.data FROM (SELECT id, " + sqlCall(int16) + " AS r FROM vols) ORDER BY id")
          .first();
      assertThat((byte[]) plain.get(1)).hasSameSizeAs((byte[]) sql.get(0).get(2)).isNotEqualTo((byte[]) sql.get(0).get(2));
      spark.conf().unset(io.volpool.conf.VolpoolOptions.INPUT_RESCALE_SLOPE.key());
      spark.conf().set(io.volpool.conf.VolpoolOptions.INPUT_RESCALE_SLOPE_COLUMN.key(), "slope");
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> Volpool.register(spark))
          .hasMessageContaining("not rescale columns").hasMessageContaining("Volpool.transform");
    } finally {
      for (var k : List.of(io.volpool.conf.VolpoolOptions.INPUT_RESCALE_SLOPE, io.volpool.conf.VolpoolOptions.INPUT_RESCALE_INTERCEPT,
          io.volpool.conf.VolpoolOptions.OUTPUT_DTYPE, io.volpool.conf.VolpoolOptions.INPUT_RESCALE_SLOPE_COLUMN)) {
        spark.conf().unset(k.key());
      }
      Volpool.register(spark);
    }
  }

  @Test
  void transformTakesTheSessionsSettingsAsDefaultsAndItsOptionsOverThem() {
    Golden.Case c = Golden.get("avgpool_k2s2p0");
    var spark = SparkTests.spark();
    Map<String, String> opts = new HashMap<>(options(c));
    String kernel = opts.remove("spark.volpool.avgpool3d.kernelSize");
    spark.conf().set("spark.volpool.avgpool3d.kernelSize", kernel);
    spark.conf().set("spark.volpool.output", "/ignored/for/transform"); // a job's session: job-only keys are not transform's
    try {
      assertMatches(c, Volpool.transform(rows(c), opts).collectAsList(), 4);
      // the session says 3; the explicit option says the case's own kernel and wins
      spark.conf().set("spark.volpool.avgpool3d.kernelSize", "3");
      assertMatches(c, Volpool.transform(rows(c), options(c)).collectAsList(), 4);
      // and a session value is really used: an impossible one fails, naming its key
      spark.conf().set("spark.volpool.batch.size", "-1");
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> Volpool.transform(rows(c), opts))
          .hasMessageContaining("spark.volpool.batch.size must be at least 0, got -1");
    } finally {
      spark.conf().unset("spark.volpool.avgpool3d.kernelSize");
      spark.conf().unset("spark.volpool.output");
      spark.conf().unset("spark.volpool.batch.size");
    }
  }

  @Test
  void sqlFunctionsTakeBigintArgumentsAndRunOncePerRowWhateverFieldsAreRead() {
    Volpool.register(SparkTests.spark());
    Golden.Case seed = Golden.get("avgpool_seed_small");
    rows(seed).createOrReplaceTempView("vols");
    long n = rows(seed).count();
    var spark = SparkTests.spark();
    List<Row> big = spark.sql("SELECT id, volpool_avgpool3d(data, shape, dtype, 3L, CAST(2 AS BIGINT), 1).data FROM vols")
        .collectAsList();
    List<Row> small = spark.sql("SELECT id, volpool_avgpool3d(data, shape, dtype, 3, 2, 1).data FROM vols").collectAsList();
    assertThat(big).hasSize((int) n);
    for (int i = 0; i < big.size(); i++) {
      assertThat((byte[]) big.get(i).get(1)).isEqualTo((byte[]) small.get(i).get(1));
    }
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> spark.sql(
        "SELECT volpool_avgpool3d(data, shape, dtype, 3, 2, 5000000000L).data FROM vols").collectAsList())
        .hasStackTraceContaining("padding must be an integer (int or bigint), got 5000000000 (Long)");
    Dataset<Row> withR = rows(seed).withColumn("r", functions.callUDF("volpool_avgpool3d", functions.col("data"),
        functions.col("shape"), functions.col("dtype"), functions.lit(3), functions.lit(2), functions.lit(1)));
    Map<String, java.util.function.Supplier<Dataset<Row>>> queries = new java.util.LinkedHashMap<>();
    for (String q : List.of("SELECT r.shape, r.data FROM (SELECT volpool_avgpool3d(data, shape, dtype, 3, 2, 1) AS r FROM vols)",
        "SELECT volpool_avgpool3d(data, shape, dtype, 3, 2, 1).shape, volpool_avgpool3d(data, shape, dtype, 3, 2, 1).data FROM vols",
        "SELECT r.shape, r.data FROM (SELECT volpool_avgpool3d(data, shape, dtype, 3, 2, 1) AS r FROM vols) WHERE size(r.shape) = 4")) {
      queries.put(q, () -> spark.sql(q));
    }
    queries.put("withColumn(r).select(r.shape, r.data)", () -> withR.select("r.shape", "r.data"));
    queries.put("withColumn(r).filter(r.shape).select(r.shape, r.data)",
        () -> withR.filter("size(r.shape) = 4").select("r.shape", "r.data"));
    // Spark's subexpression elimination often runs a repeated call once; the function must not depend on it
    spark.conf().set("spark.sql.subexpressionElimination.enabled", "false");
    try {
      for (String q : queries.keySet()) {
        long before = Volpool.RUNS.get();
        List<Row> got = queries.get(q).get().collectAsList();
        assertThat(got).hasSize((int) n);
        assertThat(got.get(0).getList(0)).hasSize(4);
        assertThat(Volpool.RUNS.get() - before).as("kernel runs for " + q).isEqualTo(n);
      }
    } finally {
      spark.conf().unset("spark.sql.subexpressionElimination.enabled");
    }
  }
}
