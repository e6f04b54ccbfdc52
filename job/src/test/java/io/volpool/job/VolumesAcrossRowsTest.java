package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.cpu.CpuBackend;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.example.GroupReadSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Volumes stored across rows ({@code id}, whole {@code shape}, {@code d0}/{@code d1}, {@code data}
 * holding those planes) through the job: rows in any order and any files, the output again across
 * rows, bit for bit what the whole volume gives; broken plane ranges are bad records naming the
 * volume and the planes; and a volume larger than 2 GiB end to end.
 */
class VolumesAcrossRowsTest {
  static final MessageType SCHEMA = MessageTypeParser.parseMessageType("message m { required binary id (STRING);"
      + " required group shape (LIST) { repeated group list { required int32 element; } } required binary dtype (STRING);"
      + " required int32 d0; required int32 d1; required binary data; }");

  /** A deterministic value of each element, so a test can make any planes again without holding the volume. */
  static float value(long seed, int c, int d, int h, int w) {
    long z = seed + (((long) c * 4099 + d) * 8191 + h) * 16381 + w;
    z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
    z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
    return ((z >>> 40) / (float) (1 << 24)) * 4 - 2;
  }

  /** Planes [d0, d1) of every channel, [C, d1 - d0, H, W]. */
  static float[] planes(long seed, VolumeShape s, int d0, int d1) {
    float[] a = new float[s.c() * (d1 - d0) * s.h() * s.w()];
    int i = 0;
    for (int c = 0; c < s.c(); c++) {
      for (int d = d0; d < d1; d++) {
        for (int h = 0; h < s.h(); h++) {
          for (int w = 0; w < s.w(); w++) {
            a[i++] = value(seed, c, d, h, w);
          }
        }
      }
    }
    return a;
  }

  record Part(String id, long seed, VolumeShape shape, int d0, int d1) {}

  static Group row(Part p) {
    Group g = new SimpleGroupFactory(SCHEMA).newGroup().append("id", p.id());
    Group s = g.addGroup("shape");
    for (int d : p.shape().toArray()) {
      s.addGroup("list").append("element", d);
    }
    float[] f = planes(p.seed(), p.shape(), p.d0(), p.d1());
    ByteBuffer b = ByteBuffer.allocate(f.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(f);
    return g.append("dtype", "float32").append("d0", p.d0()).append("d1", p.d1()).append("data", Binary.fromConstantByteArray(b.array()));
  }

  static void write(Path file, List<Part> parts, CompressionCodecName codec) throws IOException {
    write(file, parts, codec, Integer.MAX_VALUE);
  }

  /** Writes {@code parts} as rows in 8 MiB row groups, checking the size every {@code checkEvery} rows (parquet: 100). */
  static void write(Path file, List<Part> parts, CompressionCodecName codec, int checkEvery) throws IOException {
    Files.createDirectories(file.getParent());
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(file.toUri()))
        .withConf(new Configuration()).withType(SCHEMA).withCompressionCodec(codec).withRowGroupSize(8L << 20)
        .withMinRowCountForPageSizeCheck(Math.min(100, checkEvery)).withMaxRowCountForPageSizeCheck(Math.min(10000, checkEvery))
        .build()) {
      for (Part p : parts) {
        w.write(row(p));
      }
    }
  }

  /** Cuts a volume into rows at {@code cuts} (plane indices between 0 and D). */
  static List<Part> cut(String id, long seed, VolumeShape s, int... cuts) {
    List<Part> out = new ArrayList<>();
    int from = 0;
    for (int c : cuts) {
      out.add(new Part(id, seed, s, from, c));
      from = c;
    }
    out.add(new Part(id, seed, s, from, s.d()));
    return out;
  }

  /** The output rows of each id, reassembled into whole volumes: id -> floats, checking the plane ranges tile [0, D). */
  static final Map<String, Integer> ROWS = new HashMap<>();

  static Map<String, float[]> readOutput(Path out, Map<String, VolumeShape> shapes) throws IOException {
    Map<String, List<Group>> byId = new HashMap<>();
    ROWS.clear();
    try (java.util.stream.Stream<Path> files = Files.walk(out)) {
      for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".parquet")).toList()) {
        try (ParquetReader<Group> r = ParquetReader.builder(new GroupReadSupport(), new org.apache.hadoop.fs.Path(f.toUri()))
            .build()) {
          for (Group g = r.read(); g != null; g = r.read()) {
            byId.computeIfAbsent(g.getString("id", 0), k -> new ArrayList<>()).add(g);
          }
        }
      }
    }
    Map<String, float[]> vols = new HashMap<>();
    for (Map.Entry<String, List<Group>> e : byId.entrySet()) {
      VolumeShape s = shapes.get(e.getKey());
      float[] y = new float[(int) s.numel()];
      java.util.Arrays.fill(y, Float.NaN);
      List<Group> rows = new ArrayList<>(e.getValue());
      ROWS.put(e.getKey(), rows.size());
      rows.sort(java.util.Comparator.comparingInt(g -> g.getInteger("d0", 0)));
      int next = 0;
      int ohw = s.h() * s.w();
      for (Group g : rows) {
        Group shape = g.getGroup("shape", 0);
        List<Integer> dims = new ArrayList<>();
        for (int i = 0; i < shape.getFieldRepetitionCount(0); i++) {
          dims.add(shape.getGroup(0, i).getInteger(0, 0));
        }
        assertThat(dims).as("shape column of %s holds the whole output volume", e.getKey()).containsExactly(s.c(), s.d(), s.h(), s.w());
        int d0 = g.getInteger("d0", 0);
        int d1 = g.getInteger("d1", 0);
        assertThat(d0).as("output rows of %s tile the planes", e.getKey()).isEqualTo(next);
        next = d1;
        float[] part = new float[s.c() * (d1 - d0) * ohw];
        ByteBuffer.wrap(g.getBinary("data", 0).getBytes()).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(part);
        for (int c = 0; c < s.c(); c++) {
          System.arraycopy(part, c * (d1 - d0) * ohw, y, (int) (c * s.plane() + (long) d0 * ohw), (d1 - d0) * ohw);
        }
      }
      assertThat(next).isEqualTo(s.d());
      vols.put(e.getKey(), y);
    }
    return vols;
  }

  static void assertBitIdentical(float[] got, float[] want, String what) {
    assertThat(got.length).isEqualTo(want.length);
    for (int i = 0; i < want.length; i++) {
      if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(want[i])) {
        throw new AssertionError(what + ": element " + i + " is " + got[i] + " but the whole volume gives " + want[i]);
      }
    }
  }

  @Test
  void rowsInAnyOrderAndFilesGiveTheWholeVolumeResultBitForBit(@TempDir Path tmp) throws Exception {
    VolumeShape a = new VolumeShape(2, 48, 256, 256);
    VolumeShape b = new VolumeShape(3, 21, 128, 160);
    List<Part> parts = new ArrayList<>();
    parts.addAll(cut("a", 1, a, 1, 2, 17, 30, 47));
    parts.addAll(cut("b", 2, b, 5, 6, 20));
    Collections.shuffle(parts, new Random(3));
    write(tmp.resolve("in/one.parquet"), parts.subList(0, 5), CompressionCodecName.UNCOMPRESSED);
    write(tmp.resolve("in/sub/two.parquet"), parts.subList(5, parts.size()), CompressionCodecName.SNAPPY);
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "output", out.toString(),
        "pipeline", "avgpool3d", "memory.budget", "96m", "output.rowBytes", "1m", "device", SparkTests.device()));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       2 in, 2 out").contains("2 slabbed")
        .contains("rows          10 in, ").contains("(the input holds 2 volumes stored across rows)");
    Pipeline p = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));
    Map<String, VolumeShape> outShapes = Map.of("a", p.outputShape(a), "b", p.outputShape(b));
    Map<String, float[]> got = readOutput(out, outShapes);
    assertThat(got).containsOnlyKeys("a", "b");
    try (CpuBackend cpu = CpuBackend.fast(2)) {
      assertBitIdentical(got.get("a"), cpu.run(p, a, planes(1, a, 0, a.d()), 1), "volume a");
      assertBitIdentical(got.get("b"), cpu.run(p, b, planes(2, b, 0, b.d()), 1), "volume b");
    }
    // output rows of at most 1 MiB: a's output planes are 2 x 128 x 128 x 4 = 128 KiB, so 8 per row
    assertThat(ROWS.get("a")).isEqualTo(3);
    assertThat(ROWS.get("b")).isEqualTo(1);
  }

  @Test
  void npyOutputWritesOneFilePerVolumeNamedByItsId(@TempDir Path tmp) throws Exception {
    VolumeShape a = new VolumeShape(2, 60, 256, 256);
    VolumeShape b = new VolumeShape(3, 13, 32, 40);
    List<Part> parts = new ArrayList<>();
    parts.addAll(cut("scan-a", 1, a, 4, 9, 20, 41));
    parts.addAll(cut("scan-b", 2, b, 6));
    Collections.shuffle(parts, new Random(5));
    write(tmp.resolve("in/x.parquet"), parts, CompressionCodecName.SNAPPY);
    Path out = tmp.resolve("out");
    // rows of at most 1 MiB: scan-a's output planes are 2 x 128 x 128 x 4 = 128 KiB, so its 30 planes reach the
    // .npy writer in 4 rows, each holding a D range of both channels
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "output", out.toString(),
        "output.format", "npy", "pipeline", "avgpool3d", "memory.budget", "256m", "output.rowBytes", "1m"));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       2 in, 2 out").contains("2 slabbed");
    try (var files = Files.list(out)) {
      assertThat(files.map(f -> f.getFileName().toString()).filter(n -> !n.startsWith("_") && !n.startsWith(".")).sorted().toList())
          .containsExactly("scan-a.npy", "scan-b.npy");
    }
    Pipeline p = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));
    try (CpuBackend cpu = CpuBackend.fast(2)) {
      for (String id : List.of("scan-a", "scan-b")) {
        VolumeShape s = id.equals("scan-a") ? a : b;
        io.volpool.format.NpyArray got = SparkTests.readNpy(out.resolve(id + ".npy"));
        VolumeShape o = p.outputShape(s);
        assertThat(got.shape()).containsExactly((long) o.c(), o.d(), o.h(), o.w());
        float[] want = cpu.run(p, s, planes(id.equals("scan-a") ? 1 : 2, s, 0, s.d()), 1);
        if (SparkTests.device().equals("cpu")) {
          assertBitIdentical(got.toFloatArray(), want, id + ".npy");
        } else {
          io.volpool.testing.Tolerance.assertClose(got.toFloatArray(), want, id + ".npy on the GPU");
        }
      }
    }
  }

  @Test
  void npyOutputOfOneVolumePerRowIsRefusedAndAnIdThatCannotNameAFileIsABadRecord(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(1, 4, 8, 8);
    write(tmp.resolve("bad/x.parquet"), cut("a/b", 1, s, 2), CompressionCodecName.UNCOMPRESSED);
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("bad").toString(), "output",
        tmp.resolve("out").toString(), "output.format", "npy", "pipeline", "avgpool3d"));
    assertThat(r.code()).as(r.out() + r.err()).isEqualTo(3);
    assertThat(r.err()).contains("id=a/b").contains("cannot name an output .npy file");
    assertThat(tmp.resolve("out")).doesNotExist();
    // one volume per row (no d0/d1): .npy output has no name for it, refused before any work
    SparkTests.writeNpy(tmp.resolve("npy/v.npy"), io.volpool.format.NpyArray.of(new long[] {1, 4, 8, 8}, new float[256]));
    SparkTests.Result toRows = SparkTests.run(SparkTests.conf("input", tmp.resolve("npy").toString(), "input.format", "npy",
        "output", tmp.resolve("single").toString(), "output.format", "parquet", "pipeline", "identity"));
    assertThat(toRows.code()).as(toRows.err()).isZero();
    SparkTests.Result single = SparkTests.run(SparkTests.conf("input", tmp.resolve("single").toString(), "output",
        tmp.resolve("out2").toString(), "output.format", "npy", "pipeline", "avgpool3d"));
    assertThat(single.code()).as(single.out() + single.err()).isEqualTo(2);
    assertThat(single.err()).contains("spark.volpool.output.format=npy needs spark.volpool.input.format=npy")
        .contains("or Parquet input of volumes stored across rows");
    assertThat(tmp.resolve("out2")).doesNotExist();
  }

  static Map<String, String> seedConf(Path in, Path out) {
    return SparkTests.conf("input", in.toString(), "output", out.toString(), "pipeline", "avgpool3d", "device", SparkTests.device());
  }

  @Test
  void missingOrOverlappingPlanesAreBadRecordsNamingTheVolumeAndThePlanes(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(1, 10, 8, 8);
    List<Part> gap = new ArrayList<>(cut("v", 1, s, 4));
    gap.set(1, new Part("v", 1, s, 5, 10));
    write(tmp.resolve("gap/x.parquet"), gap, CompressionCodecName.UNCOMPRESSED);
    SparkTests.Result r = SparkTests.run(seedConf(tmp.resolve("gap"), tmp.resolve("o1")));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("id=v").contains("planes [4, 5) of its D = 10 are in no row");

    List<Part> overlap = new ArrayList<>(cut("v", 1, s, 4));
    overlap.add(new Part("v", 1, s, 3, 6));
    write(tmp.resolve("overlap/x.parquet"), overlap, CompressionCodecName.UNCOMPRESSED);
    r = SparkTests.run(seedConf(tmp.resolve("overlap"), tmp.resolve("o2")));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("id=v").contains("planes [3, 4) are in two rows (x.parquet row 0 and x.parquet row 2;");

    List<Part> end = new ArrayList<>(cut("v", 1, s, 4));
    end.set(1, new Part("v", 1, s, 4, 9));
    write(tmp.resolve("end/x.parquet"), end, CompressionCodecName.UNCOMPRESSED);
    r = SparkTests.run(seedConf(tmp.resolve("end"), tmp.resolve("o3")));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("id=v").contains("planes [9, 10) of its D = 10 are in no row");

    List<Part> shapes = new ArrayList<>(cut("v", 1, s, 4));
    shapes.set(1, new Part("v", 1, new VolumeShape(1, 10, 8, 9), 4, 10));
    write(tmp.resolve("shape/x.parquet"), shapes, CompressionCodecName.UNCOMPRESSED);
    r = SparkTests.run(seedConf(tmp.resolve("shape"), tmp.resolve("o4")));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("id=v").contains("rows disagree on the volume's shape");
    for (String o : List.of("o1", "o2", "o3", "o4")) {
      assertThat(tmp.resolve(o)).doesNotExist();
    }
  }

  /**
   * A volume of 2.25 GiB ([9, 1024, 256, 256]: past Parquet's 2 GiB per value and Spark's per row)
   * from rows to rows under a 256 MiB budget, compared channel by channel (avgpool3d is per channel)
   * bit for bit with the whole-channel result.
   */
  @Test
  void aVolumeLargerThanTwoGibibytesGoesThroughFromRowsToRows(@TempDir Path tmp) throws Exception {
    VolumeShape big = new VolumeShape(9, 1024, 256, 256);
    assertThat(big.bytes()).isGreaterThan(2L << 30);
    List<Part> parts = new ArrayList<>();
    for (int d = 0; d < big.d(); d += 16) {
      parts.add(new Part("big", 7, big, d, d + 16));
    }
    Collections.reverse(parts);
    write(tmp.resolve("in/big.parquet"), parts, CompressionCodecName.UNCOMPRESSED, 1);
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "output", out.toString(),
        "pipeline", "avgpool3d", "memory.budget", "256m", "output.rowBytes", "16m", "device", SparkTests.device()));
    assertThat(r.code()).as(r.err()).isZero();
    // larger than a task (spark.sql.files.maxPartitionBytes, 128 MiB): 8 ranges of 64 output planes in tasks of their own
    assertThat(r.out()).contains("volumes       1 in, 1 out").contains("rows          64 in, 24 out")
        .contains("2304.0 MiB in, 288.0 MiB out").contains("8 slabbed");
    Pipeline p = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));
    VolumeShape o = p.outputShape(big);
    float[] y = readOutput(out, Map.of("big", o)).get("big");
    // each range's 64 output planes of 576 KiB in rows of at most 16 MiB (28 planes): 28, 28 and 8
    assertThat(ROWS.get("big")).isEqualTo(24);
    VolumeShape channel = new VolumeShape(1, big.d(), big.h(), big.w());
    try (CpuBackend cpu = CpuBackend.fast(2)) {
      for (int c = 0; c < big.c(); c++) {
        float[] x = new float[(int) channel.numel()];
        int i = 0;
        for (int d = 0; d < big.d(); d++) {
          for (int h = 0; h < big.h(); h++) {
            for (int w = 0; w < big.w(); w++) {
              x[i++] = value(7, c, d, h, w);
            }
          }
        }
        float[] want = cpu.run(p, channel, x, 1);
        float[] got = java.util.Arrays.copyOfRange(y, (int) (c * o.plane()), (int) ((c + 1) * o.plane()));
        assertBitIdentical(got, want, "channel " + c);
      }
    }
  }

  /**
   * output.layout=rows writes single-row input across rows: a volume whose output is larger than
   * output.rowBytes in rows of whole planes (gathered channel by channel), a smaller one in one row,
   * both through batches and through a slabbed run; reassembled, they are the one-row output. And
   * output.layout=volume cannot take input stored across rows.
   */
  @Test
  void singleRowInputIsWrittenAcrossRowsWhenAsked(@TempDir Path tmp) throws Exception {
    VolumeShape big = new VolumeShape(2, 48, 256, 256);   // output [2, 24, 128, 128]: 3 MiB, 128 KiB a plane
    VolumeShape small = new VolumeShape(1, 8, 64, 64);    // output 32 KiB: one row
    Path npy = tmp.resolve("npy");
    SparkTests.writeNpy(npy.resolve("big.npy"), io.volpool.format.NpyArray.of(new long[] {2, 48, 256, 256},
        planes(3, big, 0, big.d())));
    SparkTests.writeNpy(npy.resolve("small.npy"), io.volpool.format.NpyArray.of(new long[] {1, 8, 64, 64},
        planes(4, small, 0, small.d())));
    Path rows = tmp.resolve("rows");
    SparkTests.Result w = SparkTests.run(SparkTests.conf("input", npy.toString(), "input.format", "npy", "output",
        rows.toString(), "output.format", "parquet", "pipeline", "identity"));
    assertThat(w.code()).as(w.err()).isZero();
    Pipeline p = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));
    Map<String, VolumeShape> shapes = Map.of("big.npy", p.outputShape(big), "small.npy", p.outputShape(small));
    float[] wantBig;
    float[] wantSmall;
    try (CpuBackend cpu = CpuBackend.fast(2)) {
      wantBig = cpu.run(p, big, planes(3, big, 0, big.d()), 1);
      wantSmall = cpu.run(p, small, planes(4, small, 0, small.d()), 1);
    }
    for (String budget : new String[] {"auto", "16m"}) {
      Path out = tmp.resolve("out-" + budget);
      SparkTests.Result r = SparkTests.run(SparkTests.conf("input", rows.toString(), "output", out.toString(),
          "pipeline", "avgpool3d", "output.layout", "rows", "output.rowBytes", "1m", "memory.budget", budget,
          "device", SparkTests.device()));
      assertThat(r.code()).as(r.err()).isZero();
      assertThat(r.out()).contains("volumes       2 in, 2 out").contains("rows          2 in, 4 out");
      if (budget.equals("16m")) {
        assertThat(r.out()).contains("1 slabbed");
      }
      Map<String, float[]> got = readOutput(out, shapes);
      assertThat(ROWS).containsEntry("big.npy", 3).containsEntry("small.npy", 1);
      assertBitIdentical(got.get("big.npy"), wantBig, "big.npy, budget " + budget);
      assertBitIdentical(got.get("small.npy"), wantSmall, "small.npy, budget " + budget);
    }
    SparkTests.Result bad = SparkTests.run(SparkTests.conf("input", tmp.resolve("out-auto").toString(), "output",
        tmp.resolve("again").toString(), "pipeline", "identity", "output.layout", "volume", "device", SparkTests.device()));
    assertThat(bad.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(bad.err()).contains("spark.volpool.output.layout=volume").contains("stored across rows");
  }

  /** The part's planes as int16 values (the float planes scaled and rounded), widened back to float32 exactly. */
  static short[] int16Planes(Part p) {
    float[] f = planes(p.seed(), p.shape(), p.d0(), p.d1());
    short[] v = new short[f.length];
    for (int i = 0; i < f.length; i++) {
      v[i] = (short) Math.max(-32768, Math.min(32767, Math.round(f[i] * 1000)));
    }
    return v;
  }

  /** Rows of int16 ({@code <i2}), or of the same values as float32, in one file. */
  static void writeInt16(Path file, List<Part> parts, boolean asFloat32) throws IOException {
    Files.createDirectories(file.getParent());
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(file.toUri()))
        .withConf(new Configuration()).withType(SCHEMA).withRowGroupSize(8L << 20).build()) {
      for (Part p : parts) {
        Group g = new SimpleGroupFactory(SCHEMA).newGroup().append("id", p.id());
        Group s = g.addGroup("shape");
        for (int d : p.shape().toArray()) {
          s.addGroup("list").append("element", d);
        }
        short[] v = int16Planes(p);
        ByteBuffer b = ByteBuffer.allocate(v.length * (asFloat32 ? 4 : 2)).order(ByteOrder.LITTLE_ENDIAN);
        for (short x : v) {
          if (asFloat32) {
            b.putFloat(x);
          } else {
            b.putShort(x);
          }
        }
        w.write(g.append("dtype", asFloat32 ? "float32" : "<i2").append("d0", p.d0()).append("d1", p.d1())
            .append("data", Binary.fromConstantByteArray(b.array())));
      }
    }
  }

  /**
   * A volume stored across rows of int16: the run's summary counts the bytes read at their stored width
   * (half those of float32), and its output is bit for bit the output of the same values stored as float32.
   */
  @Test
  void int16RowsAreCountedAtTheirStoredWidthAndGiveTheFloat32Output(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 12, 10, 16);
    List<Part> parts = cut("v", 5, s, 3, 8);
    Map<String, float[]> outs = new HashMap<>();
    for (boolean asFloat32 : new boolean[] {false, true}) {
      String name = asFloat32 ? "f32" : "i16";
      writeInt16(tmp.resolve(name + "/x.parquet"), parts, asFloat32);
      Path out = tmp.resolve("out-" + name);
      SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve(name).toString(), "output", out.toString(),
          "pipeline", "avgpool3d", "device", SparkTests.device()));
      assertThat(r.code()).as(r.err()).isZero();
      JsonNode summary = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
      assertThat(summary.get("bytes_in").asLong()).as(name + " bytes read").isEqualTo(s.numel() * (asFloat32 ? 4 : 2));
      assertThat(summary.get("rows_in").asLong()).isEqualTo(3);
      outs.put(name, readOutput(out, Map.of("v", new VolumeShape(2, 6, 5, 8))).get("v"));
    }
    assertBitIdentical(outs.get("i16"), outs.get("f32"), "int16 rows against the same values as float32");
  }

  /** Progress through one large volume: its input bytes are counted as its slabs finish, not when it ends. */
  @Test
  void aVolumesBytesAreCountedAsItsSlabsFinish(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 64, 64, 64); // 2 MiB in 4 rows; slabs of a few planes under a 4 MiB budget
    write(tmp.resolve("in/x.parquet"), cut("v", 9, s, 16, 32, 48), CompressionCodecName.UNCOMPRESSED);
    Configuration conf = new Configuration();
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(tmp.resolve("in/x.parquet").toUri());
    io.volpool.io.parquet.TensorLayout layout = io.volpool.io.parquet.TensorLayout.detect(
        io.volpool.job.io.ParquetInspector.inspect(file, conf).schema(), null, null);
    io.volpool.spark.TaskPlan plan = io.volpool.job.io.PlaneRowPlanner.plan(tmp.resolve("in").toString(), layout, conf,
        128L << 20, 4L << 20, 1).tasks().get(0);
    Pipeline p = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));
    io.volpool.exec.EngineSpec spec = new io.volpool.exec.EngineSpec(p, 0, io.volpool.io.parquet.ParquetBatchWriter.GAP, 1L << 20, true);
    io.volpool.memory.MemoryBudget budget = new io.volpool.memory.MemoryBudget(4L << 20);
    List<Long> seen = new ArrayList<>();
    try (CpuBackend cpu = CpuBackend.fast(1, budget);
        io.volpool.exec.SlabVolumes run = new io.volpool.exec.SlabVolumes(plan.volumes(),
            new io.volpool.io.parquet.PlaneRowsInput(layout, conf, budget, new io.volpool.backend.PhaseTimes()), cpu, 0, spec, budget,
            new io.volpool.exec.TaskState(), "test")) {
      run.onRead(() -> seen.add(run.bytesIn()));
      while (run.next() != null) {
        // drain
      }
      assertThat(run.bytesIn()).isEqualTo(s.bytes());
    }
    assertThat(seen).as("bytes counted along the volume, ending exact").isSorted().last().isEqualTo(s.bytes());
    assertThat(seen.stream().filter(b -> b > 0 && b < s.bytes()).count()).as("counts between none and all: " + seen)
        .isGreaterThanOrEqualTo(2);
  }
}
