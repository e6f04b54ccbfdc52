package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.op.VolumeShape;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a hostile user and a newcomer found (round 1), each as the user met it: through the job's
 * main, asserting on the exit code, the one line the user reads and what is left on disk.
 */
class HardeningTest {
  static final VolumeShape SMALL = new VolumeShape(3, 8, 8, 8);

  /** Binary-layout rows of random volumes of {@link #SMALL}, one per id. */
  static Dataset<Row> volumes(String... ids) {
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < ids.length; i++) {
      byte[] data = new byte[(int) SMALL.bytes()];
      new java.util.Random(i).nextBytes(data);
      for (int k = 0; k < data.length; k += 4) {
        data[k + 3] = 0x3f; // finite floats
      }
      rows.add(RowFactory.create(ids[i], SampleData.seq(SMALL.c(), SMALL.d(), SMALL.h(), SMALL.w()), "float32", data));
    }
    return SparkTests.spark().createDataFrame(rows, BadInputTest.BINARY);
  }

  static Map<String, String> identity(Path in, Path out, String... more) {
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "output", out.toString(), "pipeline", "identity");
    conf.putAll(SparkTests.conf(more));
    return conf;
  }

  static List<String> names(Path dir) throws Exception {
    try (var s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  // 1. two input rows with one id, written across rows: refused before anything is written
  @Test
  void duplicateIdsWrittenAcrossRowsAreRefusedBeforeAnythingIsWritten(@TempDir Path tmp) throws Exception {
    volumes("same", "same").coalesce(1).write().parquet(tmp.resolve("in").toString());
    SparkTests.Result r = SparkTests.run(identity(tmp.resolve("in"), tmp.resolve("out"), "output.layout", "rows"));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("bad record id=same: two input rows have this id (part-")
        .contains(" row 0 and part-").contains(" row 1)").doesNotContain("\tat ");
    assertThat(tmp.resolve("out")).doesNotExist();
    // one row per volume keeps both: no id rule there
    SparkTests.Result ok = SparkTests.run(identity(tmp.resolve("in"), tmp.resolve("out2")));
    assertThat(ok.code()).as(ok.err()).isZero();
    assertThat(SparkTests.spark().read().parquet(tmp.resolve("out2").toString()).count()).isEqualTo(2);
  }

  // 2. rows and volumes are counted apart
  @Test
  void theSummaryCountsRowsAndVolumesApart(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 12, 8, 8);
    VolumesAcrossRowsTest.write(tmp.resolve("in/x.parquet"), VolumesAcrossRowsTest.cut("v", 3, s, 2, 4, 6, 8, 10),
        CompressionCodecName.UNCOMPRESSED);
    Path out = tmp.resolve("out");
    // volumes stored across rows ran on the CPU backend only when this test was written
    SparkTests.Result r = SparkTests.run(identity(tmp.resolve("in"), out, "device", "cpu"));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       1 in, 1 out").contains("rows          6 in, 1 out");
    JsonNode j = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(j.get("volumes_in").asLong()).isEqualTo(1);
    assertThat(j.get("volumes_out").asLong()).isEqualTo(1);
    assertThat(j.get("rows_in").asLong()).isEqualTo(6);
    assertThat(j.get("rows_out").asLong()).isEqualTo(1);
    // and the other way round: one volume in one row, written as rows of at most 1 MiB
    VolumeShape big = new VolumeShape(1, 16, 128, 256); // 2 MiB, 128 KiB per plane: 8 planes per row
    VolumesAcrossRowsTest.write(tmp.resolve("one/x.parquet"), List.of(new VolumesAcrossRowsTest.Part("w", 5, big, 0, 16)),
        CompressionCodecName.UNCOMPRESSED);
    Path out2 = tmp.resolve("out2");
    r = SparkTests.run(identity(tmp.resolve("one"), out2, "output.layout", "rows", "output.rowBytes", "1m", "device", "cpu"));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       1 in, 1 out").contains("rows          1 in, 2 out");
  }

  // 3. any Unicode in paths, plain and as file: URIs
  @Test
  void pathsOfAnyUnicodeWork(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("ünï体积 in");
    volumes("a", "b").coalesce(1).write().parquet(in.resolve("été=1").toString());
    Path out = tmp.resolve("out/ünï体积");
    SparkTests.Result r = SparkTests.run(identity(in, out));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(SparkTests.spark().read().parquet(out.toString()).count()).isEqualTo(2);
    Path out2 = tmp.resolve("ausgabe-ß");
    r = SparkTests.run(identity(in, out2, "input", "file://" + in, "output", "file://" + out2));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(out2.resolve("été=1")).isDirectory();
    // the overlap guard still compares such paths
    r = SparkTests.run(identity(in, in.resolve("été=1/x"), "output.mode", "overwrite"));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("lies inside");
  }

  // 4. empty inputs: no input files at all is an error; valid files of no volumes make an empty output
  @Test
  void anInputWithNoFilesIsABadInputNamingWhatWasSkipped(@TempDir Path tmp) throws Exception {
    Files.createDirectories(tmp.resolve("empty"));
    SparkTests.Result r = SparkTests.run(identity(tmp.resolve("empty"), tmp.resolve("o1")));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("volpool: FAILED: no input files in " + tmp.resolve("empty") + ": it holds no Parquet"
        + " file (it is empty)").doesNotContain("\tat ");
    volumes("a").coalesce(1).write().parquet(tmp.resolve("hidden/.staged").toString());
    Files.writeString(tmp.resolve("hidden/_notes"), "x");
    r = SparkTests.run(identity(tmp.resolve("hidden"), tmp.resolve("o2")));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("no input files in").contains("2 file(s) skipped: ").contains(".staged/part-")
        .contains("_notes (hidden: names starting with _ or . are not input)");
    Files.createDirectories(tmp.resolve("npy"));
    Files.writeString(tmp.resolve("npy/readme.txt"), "x");
    r = SparkTests.run(identity(tmp.resolve("npy"), tmp.resolve("o3"), "input.format", "npy"));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("holds no .npy file (1 file(s) skipped: readme.txt (not .npy))");
    assertThat(tmp.resolve("o1")).doesNotExist();
    assertThat(tmp.resolve("o2")).doesNotExist();
  }

  @Test
  void validFilesOfZeroVolumesAreReadAsZeroVolumes(@TempDir Path tmp) throws Exception {
    // the resource may be inside a jar (the GPU machine runs the tests from the test jar): copy it out
    Path pyarrowEmpty = tmp.resolve("empty_row_group.parquet");
    try (var in = HardeningTest.class.getResourceAsStream("/parquet/empty_row_group.parquet")) {
      Files.copy(in, pyarrowEmpty);
    }
    // Spark writes a file with no row group for an empty DataFrame; pyarrow a row group of 0 rows
    volumes().coalesce(1).write().parquet(tmp.resolve("spark-empty").toString());
    Files.createDirectories(tmp.resolve("pyarrow-empty"));
    Files.copy(pyarrowEmpty, tmp.resolve("pyarrow-empty/a.parquet"));
    for (String in : List.of("spark-empty", "pyarrow-empty")) {
      Path out = tmp.resolve("out-" + in);
      SparkTests.Result r = SparkTests.run(identity(tmp.resolve(in), out));
      assertThat(r.code()).as(in + ": " + r.err()).isZero();
      assertThat(r.out()).contains("volumes       0 in, 0 out");
      assertThat(out.resolve(VolpoolJob.SUMMARY_FILE)).exists();
      // an output of no volumes still has the output's schema, as Spark's own empty output does
      Dataset<Row> back = SparkTests.spark().read().parquet(out.toString());
      assertThat(back.columns()).containsExactly("id", "shape", "dtype", "data");
      assertThat(back.count()).isZero();
    }
    // beside good files, an empty one holds nothing
    volumes("a", "b").coalesce(1).write().parquet(tmp.resolve("mixed").toString());
    Files.copy(pyarrowEmpty, tmp.resolve("mixed/0-empty.parquet"));
    SparkTests.Result r = SparkTests.run(identity(tmp.resolve("mixed"), tmp.resolve("out-mixed"), "pipeline", "avgpool3d"));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       2 in, 2 out");
  }

  // 5. a null struct passes through as null
  @Test
  void nullNestedPassThroughValuesSurvive(@TempDir Path tmp) throws Exception {
    StructType meta = new StructType().add("site", "string").add("slice", "int");
    StructType schema = BadInputTest.BINARY.add("meta", meta).add("tags", DataTypes.createArrayType(DataTypes.StringType));
    List<Row> rows = new ArrayList<>();
    for (Row v : volumes("a", "b", "c").collectAsList()) {
      String id = v.getString(0);
      Row m = id.equals("b") ? null : RowFactory.create("site-" + id, id.equals("c") ? null : 7);
      Object tags = id.equals("a") ? null : scala.jdk.javaapi.CollectionConverters.asScala(List.of("t-" + id)).toSeq();
      rows.add(RowFactory.create(v.get(0), v.get(1), v.get(2), v.get(3), m, tags));
    }
    SparkTests.spark().createDataFrame(rows, schema).coalesce(1).write().parquet(tmp.resolve("in").toString());
    SparkTests.Result r = SparkTests.run(identity(tmp.resolve("in"), tmp.resolve("out")));
    assertThat(r.code()).as(r.err()).isZero();
    List<Row> got = SparkTests.spark().read().parquet(tmp.resolve("out").toString()).orderBy("id")
        .select("id", "meta", "tags").collectAsList();
    assertThat(got).hasSize(3);
    assertThat(got.get(0).getStruct(1).getString(0)).isEqualTo("site-a");
    assertThat(got.get(0).isNullAt(2)).isTrue();
    assertThat(got.get(1).isNullAt(1)).as("the null struct stays null").isTrue();
    assertThat(got.get(2).getStruct(1).isNullAt(1)).isTrue();
    assertThat(got.get(2).getList(2)).containsExactly("t-c");
  }

  // 6. sizes are exact: a shape whose byte count wraps is a bad record naming the id
  @Test
  void aShapeTooLargeToCountIsABadRecord(@TempDir Path tmp) throws Exception {
    Path in = BadInputTest.parquetWith(tmp, BadInputTest.row("huge", List.of(65536, 65536, 65536, 65536), "float32",
        new byte[0]));
    SparkTests.Result r = SparkTests.run(identity(in, tmp.resolve("out")));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("bad record id=huge: volume shape [65536, 65536, 65536, 65536] has more bytes than a"
        + " 64-bit size can count").doesNotContain("\tat ");
  }

  // 7. a budget the heap cannot hold is refused before any work
  @Test
  void aBudgetLargerThanTheHeapIsRefused(@TempDir Path tmp) throws Exception {
    volumes("a").coalesce(1).write().parquet(tmp.resolve("in").toString());
    SparkTests.Result r = SparkTests.run(identity(tmp.resolve("in"), tmp.resolve("out"), "memory.budget", "1000t"));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    long heap = Runtime.getRuntime().maxMemory();
    assertThat(r.err()).contains("spark.volpool.memory.budget=1048576000.0 MiB is more than this executor's whole heap ("
        + io.volpool.memory.MemoryBudget.mib(heap)).contains("set it to at most");
    assertThat(tmp.resolve("out")).doesNotExist();
  }

  // 9. a refused run creates no folders
  @Test
  void aRefusedRunCreatesNothing(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("new/parent/out");
    SparkTests.Result r = SparkTests.run(identity(tmp.resolve("no-such-input"), out));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(tmp.resolve("new")).doesNotExist();
    // where the parent exists, the status file is all it leaves
    r = SparkTests.run(identity(tmp.resolve("no-such-input"), tmp.resolve("out")));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(names(tmp)).containsExactly(".out.volpool-status.json");
  }

  // 12. device=gpu without a GPU: the same one line every time, exit 4, no stack trace
  @Test
  void noGpuIsOneStableLineAndAnExitCodeSchedulersDoNotRetry(@TempDir Path tmp) throws Exception {
    String reason = DeviceChoiceTest.noGpuReason();
    org.junit.jupiter.api.Assumptions.assumeTrue(reason != null, "this machine has a GPU, so device=gpu cannot fail here");
    volumes("a", "b", "c", "d").repartition(4).write().parquet(tmp.resolve("in").toString());
    List<String> firstLines = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      SparkTests.Result r = SparkTests.run(identity(tmp.resolve("in"), tmp.resolve("out" + i), "device", "gpu"));
      assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_ENVIRONMENT);
      assertThat(r.err()).doesNotContain("\tat ").doesNotContain("Could not initialize class");
      firstLines.add(r.err().lines().filter(l -> l.startsWith("volpool: FAILED")).findFirst().orElse(""));
    }
    assertThat(firstLines).containsOnly("volpool: FAILED: spark.volpool.device=gpu but no usable CUDA GPU: " + reason
        + ". Set spark.volpool.device=auto to fall back to the CPU.");
  }

  // 13. did you mean, and keys without the spark. prefix
  @Test
  void unknownKeysGetTheNearestKnownOne(@TempDir Path tmp) throws Exception {
    volumes("a").coalesce(1).write().parquet(tmp.resolve("in").toString());
    Map<String, String> conf = identity(tmp.resolve("in"), tmp.resolve("out"));
    conf.put("spark.volpool.batchsize", "4");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("unknown setting spark.volpool.batchsize; did you mean spark.volpool.batch.size?")
        .doesNotContain("known settings:");
    conf.remove("spark.volpool.batchsize");
    conf.put("spark.volpool.avgpol3d.strid", "2");
    assertThat(SparkTests.run(conf).err()).contains("did you mean spark.volpool.avgpool3d.stride?");
    conf.remove("spark.volpool.avgpol3d.strid");
    conf.put("spark.volpool.zzz", "2");
    assertThat(SparkTests.run(conf).err()).contains("unknown setting spark.volpool.zzz; known settings: ");
    conf.remove("spark.volpool.zzz");
    conf.put("mode", "overwrite");
    r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.err()).contains("volpool: WARNING: --conf mode is not a Spark setting (it lacks the spark. prefix) and"
        + " is ignored; did you mean spark.volpool.output.mode?");
  }

  // 11. GPU resource requests on a local master: ignored, saying so, instead of waiting for ever
  @Test
  void gpuResourceRequestsOnALocalMasterDoNotHang(@TempDir Path tmp) throws Exception {
    volumes("a", "b").coalesce(1).write().parquet(tmp.resolve("in").toString());
    Map<String, String> conf = identity(tmp.resolve("in"), tmp.resolve("out"), "device", "cpu");
    conf.put("spark.executor.resource.gpu.amount", "1");
    conf.put("spark.task.resource.gpu.amount", "0.125");
    conf.put("spark.executor.resource.gpu.discoveryScript", "./get-gpus-resources.sh");
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("log"));
    int code = c.waitFor(120);
    assertThat(code).as(c.output()).isZero();
    assertThat(c.output()).contains("volpool: WARNING: ignoring spark.executor.resource.gpu.amount=1, ")
        .contains("spark.task.resource.gpu.amount=0.125 on the local master local[2]").contains("are for clusters");
  }

  // 1, at the commit: two volumes under one id in the committed files are counted as the reader sees them
  @Test
  void theCommitCountsVolumesAcrossRowsByIdAsAReaderWould(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(1, 4, 8, 8);
    VolumesAcrossRowsTest.write(tmp.resolve("staging/part-0.parquet"), List.of(
        new VolumesAcrossRowsTest.Part("same", 1, s, 0, 4), new VolumesAcrossRowsTest.Part("other", 2, s, 0, 2),
        new VolumesAcrossRowsTest.Part("other", 2, s, 2, 4), new VolumesAcrossRowsTest.Part("same", 3, s, 0, 4)),
        CompressionCodecName.UNCOMPRESSED);
    io.volpool.job.commit.CommittedOutput c = io.volpool.job.commit.CommittedOutput.count(
        new org.apache.hadoop.fs.Path(tmp.resolve("staging").toUri()), false, true, new org.apache.hadoop.conf.Configuration());
    assertThat(c.files()).isEqualTo(1);
    assertThat(c.rows()).isEqualTo(4);
    assertThat(c.volumes()).as("distinct ids with a row at plane 0").isEqualTo(2);
    assertThat(c.repeatedStart()).isEqualTo("same");
  }
}
