package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.format.Npy;
import io.volpool.format.NpyArray;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.sql.Row;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Volumes in one row (or one .npy file) that one batch cannot hold under the memory budget run
 * alone in slabs, by both routes: read by position where they lie (uncompressed binary Parquet
 * values, C-order .npy) and spilled to a local file first (an uncompressed list<float> column).
 * Either way the output is byte for byte the output of a run whose budget holds whole batches.
 */
class SlabbedVolumeTest {
  /** Three [4, 64, 128, 128] volumes (16 MiB each: a batch of one needs 20 MiB, more than half of 16 MiB). */
  static float[] volume(int i) {
    float[] x = new float[4 * 64 * 128 * 128];
    SplittableRandom r = new SplittableRandom(i);
    for (int k = 0; k < x.length; k++) {
      x[k] = (float) r.nextGaussian();
    }
    return x;
  }

  @org.junit.jupiter.api.Test
  void uncompressedParquetRowsLargerThanABatchGiveTheSameBytes(@TempDir Path tmp) throws Exception {
    String codec = "none";
    for (int i = 0; i < 3; i++) {
      SparkTests.writeNpy(tmp.resolve("npy/v" + i + ".npy"), NpyArray.of(new long[] {4, 64, 128, 128}, volume(i)));
    }
    Path rows = tmp.resolve("rows");
    SparkTests.Result w = SparkTests.run(SparkTests.conf("input", tmp.resolve("npy").toString(), "input.format", "npy",
        "output", rows.toString(), "output.format", "parquet", "pipeline", "identity", "output.compression", codec));
    assertThat(w.code()).as(w.err()).isZero();
    Path whole = tmp.resolve("whole");
    Path slabs = tmp.resolve("slabs");
    SparkTests.Result a = SparkTests.run(SparkTests.conf("input", rows.toString(), "output", whole.toString(),
        "pipeline", "avgpool3d", "device", SparkTests.device()));
    SparkTests.Result b = SparkTests.run(SparkTests.conf("input", rows.toString(), "output", slabs.toString(),
        "pipeline", "avgpool3d", "device", SparkTests.device(), "memory.budget", "16m"));
    assertThat(a.code()).as(a.err()).isZero();
    assertThat(b.code()).as(b.err()).isZero();
    assertThat(a.out()).doesNotContain("slabbed");
    assertThat(b.out()).contains("volumes       3 in, 3 out").contains("3 slabbed");
    List<Row> x = SparkTests.spark().read().parquet(whole.toString()).orderBy("id").collectAsList();
    List<Row> y = SparkTests.spark().read().parquet(slabs.toString()).orderBy("id").collectAsList();
    assertThat(y).hasSize(3);
    for (int i = 0; i < 3; i++) {
      assertThat(y.get(i).getString(0)).isEqualTo(x.get(i).getString(0));
      assertThat((byte[]) y.get(i).get(3)).as("volume %s", x.get(i).getString(0)).isEqualTo((byte[]) x.get(i).get(3));
    }
  }

  /**
   * A compressed page that is decompressed whole (here zstd's) is held in page memory twice
   * (compressed and decompressed), so a volume in one such row needs that much even when it runs in
   * slabs: the failure says so, naming the page and the setting. A Snappy page that hardly compresses
   * is decoded as it is read and needs no page memory: the same volume runs in slabs under that
   * budget and gives the bytes it gives whole.
   */
  @org.junit.jupiter.api.Test
  void aCompressedRowLargerThanThePageBudgetIsNamed(@TempDir Path tmp) throws Exception {
    SparkTests.writeNpy(tmp.resolve("npy/v0.npy"), NpyArray.of(new long[] {4, 64, 128, 128}, volume(0)));
    for (String codec : new String[] {"zstd", "snappy"}) {
      Path rows = tmp.resolve("rows-" + codec);
      SparkTests.Result w = SparkTests.run(SparkTests.conf("input", tmp.resolve("npy").toString(), "input.format", "npy",
          "output", rows.toString(), "output.format", "parquet", "pipeline", "identity", "output.compression", codec));
      assertThat(w.code()).as(w.err()).isZero();
      SparkTests.Result b = SparkTests.run(SparkTests.conf("input", rows.toString(), "output",
          tmp.resolve("o-" + codec).toString(), "pipeline", "avgpool3d", "device", SparkTests.device(), "memory.budget", "16m"));
      if (codec.equals("zstd")) {
        assertThat(b.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
        assertThat(b.err()).contains("a Parquet page of").contains("MiB of host memory at once").contains("spark.volpool.memory.budget");
        continue;
      }
      assertThat(b.code()).as(b.err()).isZero();
      assertThat(b.out()).contains("volumes       1 in, 1 out").contains("1 slabbed");
      SparkTests.Result a = SparkTests.run(SparkTests.conf("input", rows.toString(), "output",
          tmp.resolve("whole-" + codec).toString(), "pipeline", "avgpool3d", "device", SparkTests.device()));
      assertThat(a.code()).as(a.err()).isZero();
      List<Row> x = SparkTests.spark().read().parquet(tmp.resolve("whole-" + codec).toString()).collectAsList();
      List<Row> y = SparkTests.spark().read().parquet(tmp.resolve("o-" + codec).toString()).collectAsList();
      assertThat(y).hasSize(1);
      assertThat((byte[]) y.get(0).get(3)).as("the slabbed volume").isEqualTo((byte[]) x.get(0).get(3));
    }
  }

  /**
   * A fixed-shape list<float> column (pyarrow's fixed_shape_tensor), uncompressed: its floats stream
   * with their levels, so a volume larger than a batch is spilled to a local file and run in slabs.
   */
  @org.junit.jupiter.api.Test
  void aFloatListColumnLargerThanABatchIsSpilledAndGivesTheSameBytes(@TempDir Path tmp) throws Exception {
    org.apache.parquet.schema.MessageType schema = org.apache.parquet.schema.MessageTypeParser.parseMessageType(
        "message m { required binary id (STRING); required group t (LIST) { repeated group list { required float element; } } }");
    Path in = tmp.resolve("in/x.parquet");
    Files.createDirectories(in.getParent());
    try (org.apache.parquet.hadoop.ParquetWriter<org.apache.parquet.example.data.Group> pw =
        org.apache.parquet.hadoop.example.ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(in.toUri()))
            .withConf(new org.apache.hadoop.conf.Configuration()).withType(schema).withDictionaryEncoding(false).build()) {
      for (int i = 0; i < 2; i++) {
        org.apache.parquet.example.data.Group g = new org.apache.parquet.example.data.simple.SimpleGroupFactory(schema)
            .newGroup().append("id", "v" + i);
        org.apache.parquet.example.data.Group t = g.addGroup("t");
        float[] x = volume(i);
        for (int k = 0; k < 4 * 32 * 128 * 128; k++) {
          t.addGroup("list").append("element", x[k]);
        }
        pw.write(g);
      }
    }
    SparkTests.Result a = SparkTests.run(SparkTests.conf("input", in.getParent().toString(), "output",
        tmp.resolve("whole").toString(), "pipeline", "avgpool3d", "device", SparkTests.device(), "input.tensorShape", "4,32,128,128"));
    SparkTests.Result b = SparkTests.run(SparkTests.conf("input", in.getParent().toString(), "output",
        tmp.resolve("slabs").toString(), "pipeline", "avgpool3d", "device", SparkTests.device(), "input.tensorShape", "4,32,128,128",
        "memory.budget", "16m"));
    assertThat(a.code()).as(a.err()).isZero();
    assertThat(b.code()).as(b.err()).isZero();
    assertThat(a.out()).doesNotContain("slabbed");
    assertThat(b.out()).contains("volumes       2 in, 2 out").contains("2 slabbed");
    List<Row> x = SparkTests.spark().read().parquet(tmp.resolve("whole").toString()).orderBy("id").collectAsList();
    List<Row> y = SparkTests.spark().read().parquet(tmp.resolve("slabs").toString()).orderBy("id").collectAsList();
    assertThat(y).hasSize(2);
    for (int i = 0; i < 2; i++) {
      assertThat((byte[]) y.get(i).get(3)).as("volume v%d", i).isEqualTo((byte[]) x.get(i).get(3));
    }
  }

  @org.junit.jupiter.api.Test
  void cOrderNpyFilesLargerThanABatchGiveTheSameBytes(@TempDir Path tmp) throws Exception {
    boolean fortran = false;
    long[] shape = {4, 64, 128, 128};
    for (int i = 0; i < 2; i++) {
      float[] c = volume(i);
      Path p = tmp.resolve("npy/v" + i + ".npy");
      if (fortran) {
        // the same array stored in Fortran order: element [a, b, c, d] at ((d * 128 + c) * 64 + b) * 4 + a
        float[] f = new float[c.length];
        int k = 0;
        for (int a0 = 0; a0 < 4; a0++) {
          for (int b0 = 0; b0 < 64; b0++) {
            for (int c0 = 0; c0 < 128; c0++) {
              for (int d0 = 0; d0 < 128; d0++) {
                f[((d0 * 128 + c0) * 64 + b0) * 4 + a0] = c[k++];
              }
            }
          }
        }
        Files.createDirectories(p.getParent());
        java.nio.ByteBuffer body = java.nio.ByteBuffer.allocate(f.length * 4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        body.asFloatBuffer().put(f);
        String dict = "{'descr': '<f4', 'fortran_order': True, 'shape': (4, 64, 128, 128), }";
        StringBuilder h = new StringBuilder(dict);
        while ((10 + h.length() + 1) % 64 != 0) {
          h.append(' ');
        }
        h.append('\n');
        java.io.ByteArrayOutputStream o = new java.io.ByteArrayOutputStream();
        o.write(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (byte) h.length(), (byte) (h.length() >> 8)});
        o.write(h.toString().getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        o.write(body.array());
        Files.write(p, o.toByteArray());
        assertThat(Npy.read(Files.readAllBytes(p), "f.npy").toFloatArray()).as("the Fortran file holds the same array").isEqualTo(c);
      } else {
        SparkTests.writeNpy(p, NpyArray.of(shape, c));
      }
    }
    SparkTests.Result a = SparkTests.run(SparkTests.conf("input", tmp.resolve("npy").toString(), "input.format", "npy",
        "output", tmp.resolve("whole").toString(), "pipeline", "avgpool3d", "device", SparkTests.device()));
    SparkTests.Result b = SparkTests.run(SparkTests.conf("input", tmp.resolve("npy").toString(), "input.format", "npy",
        "output", tmp.resolve("slabs").toString(), "pipeline", "avgpool3d", "device", SparkTests.device(), "memory.budget", "16m"));
    assertThat(a.code()).as(a.err()).isZero();
    assertThat(b.code()).as(b.err()).isZero();
    assertThat(b.out()).contains("2 slabbed");
    for (int i = 0; i < 2; i++) {
      assertThat(Files.readAllBytes(tmp.resolve("slabs/v" + i + ".npy")))
          .isEqualTo(Files.readAllBytes(tmp.resolve("whole/v" + i + ".npy")));
    }
  }
}
