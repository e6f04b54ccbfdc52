package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.format.Dtype;
import io.volpool.format.Narrow;
import io.volpool.format.NpyArray;
import io.volpool.format.NpyHeader;
import io.volpool.testing.Golden;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code spark.volpool.output.dtype} through the job's main: every golden case written as float16
 * (.npy output, {@code <f2}) and bfloat16 (Parquet output, {@code dtype} column {@code bfloat16}),
 * each value the float32 run's value narrowed by {@link Narrow} bit for bit (PyTorch's rounding,
 * {@code NarrowTest}) and at most one unit in the last place from PyTorch's result narrowed; the
 * paths that narrow apart from a batch (slabs written whole, slabs written across rows, the identity
 * pipeline in slabs) give the batched bytes; bfloat16 .npy output is refused before any work.
 */
class OutputDtypeJobTest {
  static Stream<Golden.Case> cases() {
    return Golden.cases().stream();
  }

  /** The 16-bit values of a little-endian buffer. */
  static short[] shorts(ByteBuffer b) {
    short[] s = new short[b.remaining() / 2];
    b.duplicate().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(s);
    return s;
  }

  /** The data of a .npy file written by the job, checking its header says {@code descr}. */
  static ByteBuffer npyData(Path p, String descr, long[] shape) throws Exception {
    byte[] b = Files.readAllBytes(p);
    NpyHeader h = NpyHeader.parse(b, b.length, p.toString(), NpyHeader.DEFAULT_MAX_HEADER_BYTES);
    assertThat(h.descr()).as(p + " descr").isEqualTo(descr);
    assertThat(h.shape()).as(p + " shape").containsExactly(shape);
    assertThat(b.length - h.dataOffset()).as(p + " data bytes").isEqualTo(h.numel() * h.itemSize());
    return ByteBuffer.wrap(b, (int) h.dataOffset(), b.length - (int) h.dataOffset()).slice();
  }

  /** Ordered distance of two float16 or bfloat16 bit patterns (units in the last place). */
  static int ulps(short a, short b) {
    return Math.abs(ordered(a) - ordered(b));
  }

  private static int ordered(short s) {
    int v = s & 0xffff;
    return (v & 0x8000) != 0 ? -(v & 0x7fff) : v;
  }

  static boolean isNan(Dtype t, short s) {
    int v = s & 0x7fff;
    return t == Dtype.FLOAT16 ? v > 0x7c00 : v > 0x7f80;
  }

  /** Every value of {@code got} is {@code f32} narrowed, and within one ulp of {@code ref} narrowed (NaN where it is NaN). */
  static void assertNarrowed(Dtype t, short[] got, float[] f32, float[] ref, String what) {
    assertThat(got).as(what + " values").hasSameSizeAs(f32);
    for (int i = 0; i < got.length; i++) {
      short want = Narrow.to(t, f32[i]);
      if (got[i] != want) {
        throw new AssertionError(what + ": element " + i + " is 0x" + Integer.toHexString(got[i] & 0xffff) + ", the float32"
            + " run's " + f32[i] + " narrowed to " + t.numpyName() + " is 0x" + Integer.toHexString(want & 0xffff));
      }
      if (ref != null) {
        short r = Narrow.to(t, ref[i]);
        boolean ok = isNan(t, r) ? isNan(t, got[i]) : !isNan(t, got[i]) && ulps(got[i], r) <= 1;
        if (!ok) {
          throw new AssertionError(what + ": element " + i + " is 0x" + Integer.toHexString(got[i] & 0xffff) + ", PyTorch's "
              + ref[i] + " as " + t.numpyName() + " is 0x" + Integer.toHexString(r & 0xffff) + ": more than 1 ulp apart");
        }
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void everyGoldenCaseNarrowsAsPytorchRoundsIt(Golden.Case c, @TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Files.createDirectories(in);
    Files.copy(c.dir().resolve("input.npy"), in.resolve("input.npy"));
    NpyArray exp = c.expected();
    Map<String, float[]> f32 = new java.util.HashMap<>();
    for (String dtype : new String[] {"float32", "float16", "bfloat16"}) {
      Path out = tmp.resolve("out-" + dtype);
      String format = dtype.equals("bfloat16") ? "parquet" : "npy";
      Map<String, String> conf = SparkTests.conf("input", in.toString(), "input.format", "npy", "output", out.toString(),
          "output.format", format, "output.dtype", dtype);
      conf.putAll(SparkTests.caseSettings(c));
      SparkTests.Result r = SparkTests.run(conf);
      assertThat(r.code()).as(dtype + " exit code; stderr: " + r.err()).isZero();
      assertThat(r.out()).contains("volumes       " + c.batch() + " in, " + c.batch() + " out");
      if (dtype.equals("float32")) {
        f32.put("", SparkTests.readNpy(out.resolve("input.npy")).toFloatArray());
      } else if (dtype.equals("float16")) {
        short[] got = shorts(npyData(out.resolve("input.npy"), "<f2", exp.shape()));
        assertNarrowed(Dtype.FLOAT16, got, f32.get(""), exp.toFloatArray(), c + " as float16 .npy");
      } else {
        List<Row> rows = SparkTests.spark().read().parquet(out.toString()).orderBy("id").collectAsList();
        assertThat(rows).hasSize(c.batch());
        ByteBuffer all = ByteBuffer.allocate(exp.toFloatArray().length * 2);
        for (Row row : rows) {
          assertThat(row.<String>getAs("dtype")).isEqualTo("bfloat16");
          all.put((byte[]) row.getAs("data"));
        }
        assertThat(all.remaining()).as("bfloat16 bytes beyond the expected").isZero();
        assertNarrowed(Dtype.BFLOAT16, shorts(all.flip()), f32.get(""), exp.toFloatArray(), c + " as bfloat16 Parquet");
      }
    }
  }

  @Test
  void bfloat16NpyOutputIsRefusedBeforeAnyWork(@TempDir Path tmp) throws Exception {
    Golden.Case c = Golden.get("avgpool_odd");
    Path in = tmp.resolve("in");
    Files.createDirectories(in);
    Files.copy(c.dir().resolve("input.npy"), in.resolve("input.npy"));
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "input.format", "npy", "output",
        tmp.resolve("out").toString(), "output.dtype", "bfloat16");
    conf.putAll(SparkTests.caseSettings(c));
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as("stderr: " + r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("spark.volpool.output.dtype=bfloat16 needs Parquet output").contains("use float16");
    assertThat(tmp.resolve("out")).doesNotExist();
    conf.put("spark.volpool.output.dtype", "half");
    r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("spark.volpool.output.dtype must be one of float32, float16, bfloat16, got 'half'");
  }

  static float[] volume(int i, int n) {
    float[] x = new float[n];
    SplittableRandom r = new SplittableRandom(40 + i);
    for (int k = 0; k < x.length; k++) {
      // planes 3-5 of every 16 beyond float16's range: their pooled values overflow to infinity
      int d = (k / (128 * 128)) % 16;
      x[k] = (d >= 3 && d <= 5 ? 70000f : 0f) + (float) r.nextGaussian();
    }
    return x;
  }

  /** Output rows of one volume (planes [d0, d1) of every channel each) put back together as [C, D, H, W]. */
  static short[] assemble(List<Row> rows, int c, int d, int hw) {
    short[] v = new short[c * d * hw];
    int seen = 0;
    for (Row row : rows) {
      int d0 = row.getAs("d0");
      int d1 = row.getAs("d1");
      short[] s = shorts(ByteBuffer.wrap((byte[]) row.getAs("data")));
      assertThat(s).hasSize(c * (d1 - d0) * hw);
      for (int ch = 0; ch < c; ch++) {
        System.arraycopy(s, ch * (d1 - d0) * hw, v, (ch * d + d0) * hw, (d1 - d0) * hw);
      }
      seen += d1 - d0;
    }
    assertThat(seen).as("planes in the rows").isEqualTo(d);
    return v;
  }

  @Test
  void slabbedVolumesNarrowToTheBatchedBytes(@TempDir Path tmp) throws Exception {
    long[] shape = {4, 64, 128, 128};
    int n = 4 * 64 * 128 * 128;
    for (int i = 0; i < 2; i++) {
      SparkTests.writeNpy(tmp.resolve("npy/v" + i + ".npy"), NpyArray.of(shape, volume(i, n)));
    }
    String npy = tmp.resolve("npy").toString();
    // float32 and float16 in batches, then float16 in slabs (a 16m budget holds no batch of a 16 MiB volume)
    for (String[] run : new String[][] {{"f32", "npy", "float32", "avgpool3d", ""}, {"whole", "npy", "float16", "avgpool3d", ""},
        {"slabs", "npy", "float16", "avgpool3d", "16m"}, {"slabs-pq", "parquet", "float16", "avgpool3d", "16m"},
        {"slabs-rows", "parquet", "float16", "avgpool3d", "16m"}, {"copy-f32", "npy", "float32", "identity", ""},
        {"copy-slabs", "npy", "float16", "identity", "16m"}, {"copy-rows", "parquet", "float16", "identity", "16m"}}) {
      Map<String, String> conf = SparkTests.conf("input", npy, "input.format", "npy", "output", tmp.resolve(run[0]).toString(),
          "output.format", run[1], "output.dtype", run[2], "pipeline", run[3], "device", SparkTests.device());
      if (!run[4].isEmpty()) {
        conf.put("spark.volpool.memory.budget", run[4]);
      }
      if (run[0].endsWith("-rows")) {
        conf.put("spark.volpool.output.layout", "rows");
        conf.put("spark.volpool.output.rowBytes", "1m");
      }
      SparkTests.Result r = SparkTests.run(conf);
      assertThat(r.code()).as(run[0] + ": " + r.err()).isZero();
      assertThat(r.out()).as(run[0]).contains("volumes       2 in, 2 out");
      if (!run[4].isEmpty()) {
        assertThat(r.out()).as(run[0]).contains("2 slabbed");
      }
    }
    long[] pooled = {4, 32, 64, 64};
    for (int i = 0; i < 2; i++) {
      String f = "v" + i + ".npy";
      float[] f32 = SparkTests.readNpy(tmp.resolve("f32").resolve(f)).toFloatArray();
      short[] whole = shorts(npyData(tmp.resolve("whole").resolve(f), "<f2", pooled));
      assertNarrowed(Dtype.FLOAT16, whole, f32, null, "avgpool3d in batches, volume " + i);
      assertThat(whole).as("some values overflow to infinity").contains((short) 0x7c00);
      assertThat(shorts(npyData(tmp.resolve("slabs").resolve(f), "<f2", pooled))).as("slabs, volume " + i).isEqualTo(whole);
      List<Row> one = SparkTests.spark().read().parquet(tmp.resolve("slabs-pq").toString()).collectAsList().stream()
          .filter(row -> row.<String>getAs("id").endsWith(f)).toList();
      assertThat(one).hasSize(1);
      assertThat(one.get(0).<String>getAs("dtype")).isEqualTo("float16");
      assertThat(shorts(ByteBuffer.wrap((byte[]) one.get(0).getAs("data")))).as("slabs to Parquet, volume " + i)
          .isEqualTo(whole);
      List<Row> rows = new ArrayList<>(SparkTests.spark().read().parquet(tmp.resolve("slabs-rows").toString())
          .collectAsList().stream().filter(row -> row.<String>getAs("id").endsWith(f)).toList());
      // rows are sized in the output dtype: 1 MiB holds all 32 float16 planes (of float32, 16)
      assertThat(rows).as("rows of at most 1 MiB of float16 planes").hasSize(1);
      assertThat(assemble(rows, 4, 32, 64 * 64)).as("slabs across rows, volume " + i).isEqualTo(whole);
      float[] copy = SparkTests.readNpy(tmp.resolve("copy-f32").resolve(f)).toFloatArray();
      short[] copied = shorts(npyData(tmp.resolve("copy-slabs").resolve(f), "<f2", shape));
      assertNarrowed(Dtype.FLOAT16, copied, copy, null, "identity in slabs, volume " + i);
      rows = new ArrayList<>(SparkTests.spark().read().parquet(tmp.resolve("copy-rows").toString())
          .collectAsList().stream().filter(row -> row.<String>getAs("id").endsWith(f)).toList());
      assertThat(rows).as("8 MiB of float16 in rows of 1 MiB").hasSize(8);
      assertThat(assemble(rows, 4, 64, 128 * 128)).as("identity in slabs across rows, volume " + i).isEqualTo(copied);
    }
  }

  @Test
  void theSqlTransformNarrowsAsTheJobDoes() throws Exception {
    Golden.Case c = Golden.get("pipeline_seed");
    Map<String, String> opts = new java.util.HashMap<>(VolpoolApiTest.options(c));
    List<Row> f32 = Volpool.transform(VolpoolApiTest.rows(c), opts).orderBy("id").collectAsList();
    opts.put("spark.volpool.output.dtype", "float16");
    List<Row> f16 = Volpool.transform(VolpoolApiTest.rows(c), opts).orderBy("id").collectAsList();
    assertThat(f16).hasSameSizeAs(f32).isNotEmpty();
    for (int i = 0; i < f16.size(); i++) {
      assertThat(f16.get(i).<String>getAs("dtype")).isEqualTo("float16");
      assertNarrowed(Dtype.FLOAT16, shorts(ByteBuffer.wrap((byte[]) f16.get(i).getAs("data"))),
          VolpoolApiTest.floats(f32.get(i).getAs("data")), null, "transform, row " + i);
    }
  }
}
