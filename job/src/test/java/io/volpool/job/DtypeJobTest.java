package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.format.NpyHeader;
import io.volpool.testing.Golden;
import io.volpool.testing.Tolerance;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Volumes of every input dtype, as users store them in the binary layout's {@code dtype} column, through
 * the job's main on a file-backed Parquet table: each golden case with a narrow input (written by
 * {@code scripts/golden/make-dtype-golden.py}) goes in with its stored bytes under the numpy name, the
 * array-protocol string, and byte-swapped under the big-endian string, one volume per row, and comes
 * out as PyTorch's result. (GoldenJobTest runs the same cases from their .npy files.)
 */
class DtypeJobTest {
  record Variant(Golden.Case c, String spelling) {
    @Override
    public String toString() {
      return c.name() + " as '" + spelling + "'";
    }
  }

  static Stream<Variant> variants() {
    List<Variant> out = new ArrayList<>();
    for (Golden.Case c : Golden.cases()) {
      if (c.json().has("input_dtype")) {
        String name = c.json().get("input_dtype").asText();
        String descr = header(c).descr();
        out.add(new Variant(c, name));
        if (!descr.equals(name)) {
          out.add(new Variant(c, descr));
        }
        if (descr.startsWith("<")) {
          out.add(new Variant(c, ">" + descr.substring(1)));
        }
      }
    }
    assertThat(out).as("dtype golden cases").hasSizeGreaterThan(10);
    return out.stream();
  }

  static NpyHeader header(Golden.Case c) {
    try {
      byte[] b = Files.readAllBytes(c.dir().resolve("input.npy"));
      return NpyHeader.parse(b, b.length, c.name(), NpyHeader.DEFAULT_MAX_HEADER_BYTES);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("variants")
  void storedDtypeThroughTheJobMatchesPytorch(Variant v, @TempDir Path tmp) throws Exception {
    Golden.Case c = v.c();
    byte[] file = Files.readAllBytes(c.dir().resolve("input.npy"));
    NpyHeader h = header(c);
    long[] s = h.shape();
    int n = (int) s[0];
    int per = (int) (h.numel() / n * h.itemSize());
    List<Object> shape = List.of((int) s[1], (int) s[2], (int) s[3], (int) s[4]);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] data = Arrays.copyOfRange(file, (int) h.dataOffset() + i * per, (int) h.dataOffset() + (i + 1) * per);
      if (v.spelling().startsWith(">")) {
        swap(data, h.itemSize());
      }
      rows.add(BadInputTest.row(String.format("v%02d", i), shape, v.spelling(), data));
    }
    Dataset<Row> d = SparkTests.spark().createDataFrame(rows, BadInputTest.BINARY);
    Path in = tmp.resolve("in");
    d.coalesce(1).write().parquet(in.toString());
    Path out = tmp.resolve("out");
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "output", out.toString());
    conf.putAll(SparkTests.caseSettings(c));
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as("exit code; stderr: " + r.err()).isZero();

    // provenance: the stored dtype the tasks read, in the summary and in every output file's footer
    String stored = io.volpool.format.ValueType.parse(v.spelling()).toString();
    com.fasterxml.jackson.databind.JsonNode summary = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(summary.get("provenance").get("volpool.input.dtypes").asText()).isEqualTo(stored);
    try (java.util.stream.Stream<Path> files = Files.walk(out)) {
      List<Path> parquet = files.filter(p -> p.toString().endsWith(".parquet")).toList();
      assertThat(parquet).as("output files").isNotEmpty();
      for (Path f : parquet) {
        try (org.apache.parquet.hadoop.ParquetFileReader pf = org.apache.parquet.hadoop.ParquetFileReader.open(
            org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(f.toUri()),
                new org.apache.hadoop.conf.Configuration()))) {
          assertThat(pf.getFooter().getFileMetaData().getKeyValueMetaData()).containsEntry("volpool.input.dtypes", stored);
        }
      }
    }

    float[] exp = c.expected().toFloatArray();
    int outPer = exp.length / n;
    List<Row> got = SparkTests.spark().read().parquet(out.toString()).orderBy("id").collectAsList();
    assertThat(got).hasSize(n);
    for (int i = 0; i < n; i++) {
      Row row = got.get(i);
      assertThat(row.<String>getAs("dtype")).isEqualTo("float32");
      Tolerance.assertClose(JobEndToEndTest.floats(row.getAs("data")), Arrays.copyOfRange(exp, i * outPer, (i + 1) * outPer),
          v + ", volume " + i);
    }
  }

  static final Path RESCALE = Golden.dtypesDir();

  /** A rescale case's stored volumes as rows of the binary layout, with each row's slope (double) and intercept (float). */
  static Path rescaleTable(Golden.Case c, Path tmp, boolean nullSlopeInRow1) throws Exception {
    byte[] file = Files.readAllBytes(c.dir().resolve("input.npy"));
    NpyHeader h = header(c);
    long[] s = h.shape();
    int n = (int) s[0];
    int per = (int) (h.numel() / n * h.itemSize());
    List<Object> shape = List.of((int) s[1], (int) s[2], (int) s[3], (int) s[4]);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] data = Arrays.copyOfRange(file, (int) h.dataOffset() + i * per, (int) h.dataOffset() + (i + 1) * per);
      com.fasterxml.jackson.databind.JsonNode r = c.json().get("rescale").get(i);
      rows.add(RowFactory.create(String.format("v%02d", i), scala.jdk.javaapi.CollectionConverters.asScala(shape).toSeq(),
          h.descr(), data, nullSlopeInRow1 && i == 1 ? null : r.get(0).asDouble(), (float) r.get(1).asDouble()));
    }
    org.apache.spark.sql.types.StructType schema = BadInputTest.BINARY.add("RescaleSlope",
        org.apache.spark.sql.types.DataTypes.DoubleType).add("RescaleIntercept", org.apache.spark.sql.types.DataTypes.FloatType);
    Path in = tmp.resolve("in");
    SparkTests.spark().createDataFrame(rows, schema).coalesce(1).write().parquet(in.toString());
    return in;
  }

  static Golden.Case rescaleCase(String name) throws Exception {
    Path d = RESCALE.resolve(name);
    return new Golden.Case(name, d, new com.fasterxml.jackson.databind.ObjectMapper().readTree(d.resolve("case.json").toFile()));
  }

  static void assertOutputIs(Golden.Case c, Path out, int n) {
    float[] exp = c.expected().toFloatArray();
    int outPer = exp.length / n;
    List<Row> got = SparkTests.spark().read().parquet(out.toString()).orderBy("id").collectAsList();
    assertThat(got).hasSize(n);
    for (int i = 0; i < n; i++) {
      Tolerance.assertClose(JobEndToEndTest.floats(got.get(i).getAs("data")),
          Arrays.copyOfRange(exp, i * outPer, (i + 1) * outPer), c.name() + ", volume " + i);
    }
  }

  @org.junit.jupiter.api.Test
  void rescaleFromTheSettingsAsPytorchComputesIt(@TempDir Path tmp) throws Exception {
    Golden.Case c = rescaleCase("rescale_int16_fixed_avgpool");
    for (String format : new String[] {"parquet", "npy"}) {
      Path dir = tmp.resolve(format);
      Path in;
      if (format.equals("npy")) {
        in = dir.resolve("in");
        Files.createDirectories(in);
        Files.copy(c.dir().resolve("input.npy"), in.resolve("input.npy"));
      } else {
        in = rescaleTable(c, dir, false);
      }
      Path out = dir.resolve("out");
      Map<String, String> conf = SparkTests.conf("input", in.toString(), "input.format", format, "output", out.toString(),
          "output.format", "parquet", "input.rescale.slope", "1", "input.rescale.intercept", "-1024");
      conf.putAll(SparkTests.caseSettings(c));
      SparkTests.Result r = SparkTests.run(conf);
      assertThat(r.code()).as(format + " exit code; stderr: " + r.err()).isZero();
      assertOutputIs(c, out, 3);
    }
  }

  @org.junit.jupiter.api.Test
  void rescaleFromEachRowsColumnsAsPytorchComputesIt(@TempDir Path tmp) throws Exception {
    Golden.Case c = rescaleCase("rescale_uint16_columns_avgpool");
    Path in = rescaleTable(c, tmp, false);
    Path out = tmp.resolve("out");
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "output", out.toString(),
        "input.rescale.slopeColumn", "RescaleSlope", "input.rescale.interceptColumn", "RescaleIntercept");
    conf.putAll(SparkTests.caseSettings(c));
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as("exit code; stderr: " + r.err()).isZero();
    assertOutputIs(c, out, 3);
    // the columns pass through to the output, beside the results
    assertThat(SparkTests.spark().read().parquet(out.toString()).orderBy("id").select("RescaleSlope").collectAsList())
        .extracting(x -> x.getDouble(0)).containsExactly(0.5, 2.5, 0.001);
  }

  @org.junit.jupiter.api.Test
  void aNullRescaleColumnIsABadRecordAndAMissingOneASettingsError(@TempDir Path tmp) throws Exception {
    Golden.Case c = rescaleCase("rescale_uint16_columns_avgpool");
    Path in = rescaleTable(c, tmp, true);
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "output", tmp.resolve("out").toString(),
        "input.rescale.slopeColumn", "RescaleSlope");
    conf.putAll(SparkTests.caseSettings(c));
    BadInputTest.assertFailsCleanly(SparkTests.run(conf), tmp, "bad record id=v01",
        "rescale slope column 'RescaleSlope' is null; every row needs its slope");

    conf.put("spark.volpool.input.rescale.slopeColumn", "Slope");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as("stderr: " + r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("spark.volpool.input.rescale.slopeColumn names 'Slope', which is not a column of input")
        .contains("RescaleSlope");

    conf.put("spark.volpool.input.rescale.slopeColumn", "RescaleSlope");
    conf.put("spark.volpool.input.rescale.slope", "2");
    r = SparkTests.run(conf);
    assertThat(r.code()).as("stderr: " + r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("both spark.volpool.input.rescale.slope and spark.volpool.input.rescale.slopeColumn are set");
  }

  static void swap(byte[] b, int size) {
    for (int i = 0; i < b.length; i += size) {
      for (int k = 0; k < size / 2; k++) {
        byte t = b[i + k];
        b[i + k] = b[i + size - 1 - k];
        b[i + size - 1 - k] = t;
      }
    }
  }
}
