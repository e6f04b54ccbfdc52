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

  /**
   * Volumes as scanners store them, mostly one value (air at -1024) with a region of others, in the
   * binary layout Spark writes (Snappy pages of short literals between long copies), through the
   * identity pipeline: every value must come out as stored, widened. The word-wise literal copy of
   * the Snappy reader turned bytes around where a batch's window was little-endian (the GPU's pinned
   * staging, the CPU's batch arrays), and such volumes came out wrong without a word of warning.
   */
  @ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.ValueSource(strings = {"float32", "int16", "<u2", "uint8"})
  void volumesOfRepeatedValuesComeThroughSnappyPagesIntact(String dtype, @TempDir Path tmp) throws Exception {
    io.volpool.format.ValueType t = io.volpool.format.ValueType.parse(dtype);
    int c = 2;
    int d = 6;
    int h = 20;
    int w = 24;
    int numel = c * d * h * w;
    java.util.SplittableRandom r = new java.util.SplittableRandom(11);
    List<Row> rows = new ArrayList<>();
    List<float[]> want = new ArrayList<>();
    for (int v = 0; v < 3; v++) {
      java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(numel * t.itemSize()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      float[] f = new float[numel];
      for (int i = 0; i < numel; i++) {
        int x = i % w;
        int y = (i / w) % h;
        boolean body = x > 5 && x < 18 && y > 4 && y < 15 && r.nextInt(4) != 0;
        int value = body ? r.nextInt(200) + (t.dtype() == io.volpool.format.Dtype.UINT8 ? 0 : 40) : (t.itemSize() == 1 ? 3 : -1024);
        if (t.dtype() == io.volpool.format.Dtype.UINT16 && value < 0) {
          value = 64512;
        }
        switch (t.itemSize()) {
          case 1:
            b.put((byte) value);
            break;
          case 2:
            b.putShort((short) value);
            break;
          default:
            b.putFloat(value);
        }
        f[i] = t.dtype() == io.volpool.format.Dtype.UINT16 ? (value & 0xffff) : value;
      }
      want.add(f);
      rows.add(BadInputTest.row(String.format("v%02d", v), List.of(c, d, h, w), dtype, b.array()));
    }
    Path in = tmp.resolve("in");
    SparkTests.spark().createDataFrame(rows, BadInputTest.BINARY).coalesce(1).write().parquet(in.toString());
    Path out = tmp.resolve("out");
    SparkTests.Result res = SparkTests.run(HardeningTest.identity(in, out));
    assertThat(res.code()).as("exit code; stderr: " + res.err()).isZero();
    List<Row> got = SparkTests.spark().read().parquet(out.toString()).orderBy("id").collectAsList();
    assertThat(got).hasSize(3);
    for (int v = 0; v < 3; v++) {
      float[] g = JobEndToEndTest.floats(got.get(v).getAs("data"));
      int first = -1;
      for (int i = 0; i < numel && first < 0; i++) {
        first = Float.floatToRawIntBits(g[i]) != Float.floatToRawIntBits(want.get(v)[i]) ? i : -1;
      }
      assertThat(first).as(dtype + " volume " + v + ": first value that is not the stored one"
          + (first >= 0 ? " (" + g[first] + " instead of " + want.get(v)[first] + ")" : "")).isEqualTo(-1);
    }
  }

  /** The dtype cases Arrow has a type for (bfloat16 has none), for the list layout. */
  static Stream<Golden.Case> listCases() {
    return Golden.cases().stream().filter(c -> c.json().has("input_dtype")
        && !c.json().get("input_dtype").asText().equals("bfloat16"));
  }

  /**
   * The element type pyarrow writes for a fixed_shape_tensor of {@code t}: int8 to uint16 as INT32 with
   * their integer annotation, int32 plain, halffloat as a 2-byte FLOAT16, double as DOUBLE.
   */
  static org.apache.parquet.schema.Type element(io.volpool.format.Dtype t) {
    org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName p;
    org.apache.parquet.schema.LogicalTypeAnnotation a = null;
    int len = 0;
    switch (t) {
      case UINT8, INT8, UINT16, INT16 -> {
        p = org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.INT32;
        a = org.apache.parquet.schema.LogicalTypeAnnotation.intType(t.itemSize() * 8, t.name().startsWith("INT"));
      }
      case INT32 -> p = org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.INT32;
      case FLOAT16 -> {
        p = org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY;
        a = org.apache.parquet.schema.LogicalTypeAnnotation.float16Type();
        len = 2;
      }
      case FLOAT64 -> p = org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.DOUBLE;
      default -> p = org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.FLOAT;
    }
    org.apache.parquet.schema.Types.PrimitiveBuilder<org.apache.parquet.schema.PrimitiveType> b =
        org.apache.parquet.schema.Types.optional(p);
    if (len > 0) {
      b = b.length(len);
    }
    return (a == null ? b : b.as(a)).named("element");
  }

  /**
   * The {@code ARROW:schema} footer entry pyarrow writes for a table of an {@code id} string and a
   * {@code tensor} fixed_shape_tensor of {@code t} values and {@code shape}: a base64 Arrow IPC schema whose
   * tensor field is a fixed-size list carrying the extension's name and its shape as metadata.
   */
  static String arrowSchema(io.volpool.format.Dtype t, long[] shape) throws java.io.IOException {
    org.apache.arrow.vector.types.pojo.ArrowType value = switch (t) {
      case UINT8 -> new org.apache.arrow.vector.types.pojo.ArrowType.Int(8, false);
      case INT8 -> new org.apache.arrow.vector.types.pojo.ArrowType.Int(8, true);
      case UINT16 -> new org.apache.arrow.vector.types.pojo.ArrowType.Int(16, false);
      case INT16 -> new org.apache.arrow.vector.types.pojo.ArrowType.Int(16, true);
      case INT32 -> new org.apache.arrow.vector.types.pojo.ArrowType.Int(32, true);
      case FLOAT16 -> new org.apache.arrow.vector.types.pojo.ArrowType.FloatingPoint(
          org.apache.arrow.vector.types.FloatingPointPrecision.HALF);
      case FLOAT64 -> new org.apache.arrow.vector.types.pojo.ArrowType.FloatingPoint(
          org.apache.arrow.vector.types.FloatingPointPrecision.DOUBLE);
      default -> new org.apache.arrow.vector.types.pojo.ArrowType.FloatingPoint(
          org.apache.arrow.vector.types.FloatingPointPrecision.SINGLE);
    };
    long numel = shape[0] * shape[1] * shape[2] * shape[3];
    org.apache.arrow.vector.types.pojo.Field item = new org.apache.arrow.vector.types.pojo.Field("item",
        org.apache.arrow.vector.types.pojo.FieldType.nullable(value), null);
    Map<String, String> ext = Map.of("ARROW:extension:name", "arrow.fixed_shape_tensor", "ARROW:extension:metadata",
        "{\"shape\":[" + shape[0] + "," + shape[1] + "," + shape[2] + "," + shape[3] + "]}");
    org.apache.arrow.vector.types.pojo.Field tensor = new org.apache.arrow.vector.types.pojo.Field("tensor",
        new org.apache.arrow.vector.types.pojo.FieldType(true,
            new org.apache.arrow.vector.types.pojo.ArrowType.FixedSizeList((int) numel), null, ext), List.of(item));
    org.apache.arrow.vector.types.pojo.Field id = new org.apache.arrow.vector.types.pojo.Field("id",
        org.apache.arrow.vector.types.pojo.FieldType.nullable(new org.apache.arrow.vector.types.pojo.ArrowType.Utf8()), null);
    java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
    org.apache.arrow.vector.ipc.message.MessageSerializer.serialize(
        new org.apache.arrow.vector.ipc.WriteChannel(java.nio.channels.Channels.newChannel(b)),
        new org.apache.arrow.vector.types.pojo.Schema(List.of(id, tensor)));
    return java.util.Base64.getEncoder().encodeToString(b.toByteArray());
  }

  /**
   * A case's volumes as pyarrow's fixed_shape_tensor layout writes them ({@code optional group tensor (LIST)}
   * of the element type, one row per volume), dictionary-encoded and Snappy-compressed as pyarrow's defaults
   * are, or plain and uncompressed (the pages the reader streams).
   */
  static Path listTable(Golden.Case c, Path dir, boolean pyarrowDefaults) throws Exception {
    NpyHeader h = header(c);
    byte[] file = Files.readAllBytes(c.dir().resolve("input.npy"));
    java.nio.ByteBuffer data = java.nio.ByteBuffer.wrap(file, (int) h.dataOffset(), file.length - (int) h.dataOffset())
        .slice().order(java.nio.ByteOrder.LITTLE_ENDIAN);
    io.volpool.format.Dtype t = h.type().dtype();
    org.apache.parquet.schema.MessageType schema = new org.apache.parquet.schema.MessageType("schema",
        org.apache.parquet.schema.Types.optional(org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.BINARY)
            .as(org.apache.parquet.schema.LogicalTypeAnnotation.stringType()).named("id"),
        org.apache.parquet.schema.Types.optionalGroup().as(org.apache.parquet.schema.LogicalTypeAnnotation.listType())
            .addField(org.apache.parquet.schema.Types.repeatedGroup().addField(element(t)).named("list")).named("tensor"));
    Path p = dir.resolve("in/volumes.parquet");
    Files.createDirectories(p.getParent());
    int n = (int) h.shape()[0];
    long per = h.numel() / n;
    try (org.apache.parquet.hadoop.ParquetWriter<org.apache.parquet.example.data.Group> w =
        org.apache.parquet.hadoop.example.ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(p.toUri()))
            .withConf(new org.apache.hadoop.conf.Configuration()).withType(schema)
            .withCompressionCodec(pyarrowDefaults ? org.apache.parquet.hadoop.metadata.CompressionCodecName.SNAPPY
                : org.apache.parquet.hadoop.metadata.CompressionCodecName.UNCOMPRESSED)
            .withDictionaryEncoding(pyarrowDefaults)
            .withExtraMetaData(Map.of("ARROW:schema", arrowSchema(t, new long[] {h.shape()[1], h.shape()[2], h.shape()[3],
                h.shape()[4]})))
            .build()) {
      org.apache.parquet.example.data.simple.SimpleGroupFactory f =
          new org.apache.parquet.example.data.simple.SimpleGroupFactory(schema);
      for (int v = 0; v < n; v++) {
        org.apache.parquet.example.data.Group g = f.newGroup().append("id", String.format("v%02d", v));
        org.apache.parquet.example.data.Group list = g.addGroup("tensor");
        for (long i = v * per; i < (v + 1) * per; i++) {
          org.apache.parquet.example.data.Group e = list.addGroup("list");
          int at = (int) (i * t.itemSize());
          switch (t) {
            case UINT8 -> e.append("element", data.get(at) & 0xff);
            case INT8 -> e.append("element", (int) data.get(at));
            case UINT16 -> e.append("element", data.getShort(at) & 0xffff);
            case INT16 -> e.append("element", (int) data.getShort(at));
            case INT32 -> e.append("element", data.getInt(at));
            case FLOAT16 -> e.append("element", org.apache.parquet.io.api.Binary.fromConstantByteArray(
                java.util.Arrays.copyOfRange(file, (int) h.dataOffset() + at, (int) h.dataOffset() + at + 2)));
            case FLOAT64 -> e.append("element", data.getDouble(at));
            default -> e.append("element", data.getFloat(at));
          }
        }
        w.write(g);
      }
    }
    return p.getParent();
  }

  /**
   * Each input dtype as a fixed_shape_tensor list column (pyarrow's layout for FixedShapeTensorArray of
   * that value type), with pyarrow's default encoding and as plain pages: PyTorch's result, and the
   * stored dtype in the provenance.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("listCases")
  void fixedShapeTensorColumnsOfEveryValueTypeMatchPytorch(Golden.Case c, @TempDir Path tmp) throws Exception {
    long[] s = header(c).shape();
    int n = (int) s[0];
    for (boolean pyarrowDefaults : new boolean[] {true, false}) {
      Path dir = tmp.resolve(pyarrowDefaults ? "dict-snappy" : "plain");
      Path in = listTable(c, dir, pyarrowDefaults);
      Path out = dir.resolve("out");
      // the shape from the footer's ARROW:schema, as a pyarrow file gives it (no setting)
      Map<String, String> conf = SparkTests.conf("input", in.toString(), "output", out.toString());
      conf.putAll(SparkTests.caseSettings(c));
      SparkTests.Result r = SparkTests.run(conf);
      assertThat(r.code()).as(c.name() + " exit code; stderr: " + r.err()).isZero();
      assertThat(r.out()).as(c.name() + " summary; stderr: " + r.err()).contains("volumes       " + n + " in, " + n + " out");
      assertOutputIs(c, out, n);
      com.fasterxml.jackson.databind.JsonNode summary = new com.fasterxml.jackson.databind.ObjectMapper()
          .readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
      assertThat(summary.get("provenance").get("volpool.input.dtypes").asText())
          .isEqualTo(c.json().get("input_dtype").asText());
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
