package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.format.NpyArray;
import io.volpool.io.QuarantinedRecord;
import io.volpool.job.commit.KillPoints;
import io.volpool.job.commit.SetAside;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spark.volpool.badRecords.path}, as Spark's {@code badRecordsPath}: a bad record is set aside with its id,
 * file, row and rule in {@code <path>/<run id>/bad_records.json}, the job completes with the others (their output
 * equal to a run over them alone), counts them in its summary and status file and exits 5. Each set aside exactly
 * once, also by a run killed and resumed; a run without the setting keeps none of the tasks that set records aside.
 */
class BadRecordsPathTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The lines of the one bad_records.json under {@code path}. */
  static List<JsonNode> badRecords(Path path) throws Exception {
    List<Path> files;
    try (Stream<Path> s = Files.walk(path)) {
      files = s.filter(p -> p.getFileName().toString().equals(SetAside.FILE)).toList();
    }
    assertThat(files).as("one bad_records.json under " + path).hasSize(1);
    List<JsonNode> lines = new ArrayList<>();
    for (String l : Files.readAllLines(files.get(0))) {
      lines.add(JSON.readTree(l));
    }
    return lines;
  }

  /** The files under {@code dir} (none when it does not exist): the bad-records path is made when the run starts. */
  static List<Path> files(Path dir) throws Exception {
    if (!Files.exists(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).toList();
    }
  }

  static Map<?, ?> status(Path out) throws Exception {
    return RunStatus.read(RunStatus.path(new org.apache.hadoop.fs.Path(out.toString())),
        new org.apache.hadoop.conf.Configuration());
  }

  /** What an output of one volume per row holds: id to the digest of its data. */
  static Map<String, String> rows(Path out) throws Exception {
    Map<String, String> m = new TreeMap<>();
    for (Row r : SparkTests.spark().read().parquet(out.toString()).collectAsList()) {
      assertThat(m.put(r.getAs("id"), CrashTest.sha(r.getAs("data")))).as("id " + r.getAs("id") + " once").isNull();
    }
    return m;
  }

  static void assertNoSideFiles(Path out) throws Exception {
    try (Stream<Path> s = Files.walk(out)) {
      assertThat(s.map(Path::toString)).as("no side file of bad records left in the output")
          .noneMatch(p -> p.contains(QuarantinedRecord.FOLDER));
    }
  }

  @Test
  void badRecordsAreSetAsideWithTheirRowAndRuleAndTheOthersAreWritten(@TempDir Path tmp) throws Exception {
    byte[] good = SampleData.volume(0, SampleData.SHAPE);
    List<Object> shape = List.of(3, 16, 32, 32);
    List<Row> goodRows = List.of(BadInputTest.row("good-1", shape, "float32", good),
        BadInputTest.row("good-2", shape, "float32", good), BadInputTest.row("good-3", shape, "float32", good),
        BadInputTest.row("good-4", shape, "float32", good));
    Path in = BadInputTest.parquetOf(tmp, List.of(goodRows.get(0), BadInputTest.row("bad-a", shape, "int64", new byte[8]),
        goodRows.get(1), BadInputTest.row("bad-b", shape, "float32", new byte[100]),
        BadInputTest.row("bad-c", shape, "float32", null), goodRows.get(2),
        BadInputTest.row("bad-d", List.of(4, 16, 32, 32), "float32", new byte[4 * 16 * 32 * 32 * 4]), goodRows.get(3)));
    Path onlyGood = tmp.resolve("good");
    SparkTests.spark().createDataFrame(goodRows, BadInputTest.BINARY).coalesce(1).write().parquet(onlyGood.toString());
    Path clean = tmp.resolve("clean");
    SparkTests.Result c = SparkTests.run(JobEndToEndTest.seedConf(onlyGood, "parquet", clean));
    assertThat(c.code()).as(c.err()).isZero();

    Path out = tmp.resolve("out");
    Path bad = tmp.resolve("bad");
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "parquet", out);
    conf.put(io.volpool.conf.VolpoolOptions.BAD_RECORDS_PATH.key(), bad.toString());
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as("done, with bad records set aside: " + r.err()).isEqualTo(VolpoolMain.EXIT_QUARANTINED);
    assertThat(rows(out)).as("the good records, as a run over them alone writes them").isEqualTo(rows(clean));

    List<JsonNode> lines = badRecords(bad);
    assertThat(lines).extracting(l -> l.get("id").asText()).containsExactly("bad-a", "bad-b", "bad-c", "bad-d");
    assertThat(lines).extracting(l -> l.get("row").asInt()).containsExactly(1, 3, 4, 6);
    String file;
    try (Stream<Path> s = Files.list(in)) {
      file = s.filter(p -> p.toString().endsWith(".parquet")).findFirst().orElseThrow().getFileName().toString();
    }
    assertThat(lines).allSatisfy(l -> assertThat(l.get("file").asText()).endsWith("/in/" + file));
    assertThat(lines.get(0).get("rule").asText()).startsWith("dtype must be one of");
    assertThat(lines.get(1).get("rule").asText()).isEqualTo("data holds 100 bytes but shape [3, 16, 32, 32] of float32"
        + " needs 196608 (shape x 4 bytes)");
    assertThat(lines.get(2).get("rule").asText()).isEqualTo("data is null");
    assertThat(lines.get(3).get("rule").asText()).startsWith("shape [4, 16, 32, 32] cannot go through pipeline");
    assertThat(lines.get(0).get("record").asText()).isEqualTo("id=bad-a");

    JsonNode summary = JSON.readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(summary.get("bad_records").asLong()).isEqualTo(4);
    assertThat(summary.get("volumes_out").asLong()).isEqualTo(4);
    assertThat(summary.get("bad_records_file").asText()).endsWith("/" + SetAside.FILE);
    Map<?, ?> st = status(out);
    assertThat(st.get("exit_code")).as("the status file agrees with the exit code: " + st).isEqualTo(5);
    assertThat(st.get("status")).isEqualTo("succeeded_with_bad_records");
    assertThat(((Number) st.get("bad_records")).longValue()).isEqualTo(4);
    assertThat(r.err()).contains("volpool: SUCCEEDED: 4 volumes in, 4 out, 4 bad records set aside in file:" + bad)
        .contains("(exit 5)").doesNotContain("FAILED");
    assertThat(r.out()).contains("bad records   4 set aside, in file:" + bad);
    assertNoSideFiles(out);
    assertThat(CrashTest.leftovers(tmp)).isEmpty();
  }

  @Test
  void aNullRescaleIsSetAsideAndAnOutputOfNoGoodRecordKeepsItsSchema(@TempDir Path tmp) throws Exception {
    StructType schema = BadInputTest.BINARY.add("slope", DataTypes.DoubleType);
    byte[] data = new byte[64 * 4];
    List<Row> rows = List.of(RowFactory.create("v0", SampleData.seq(1, 4, 4, 4), "float32", data, null),
        RowFactory.create("v1", SampleData.seq(1, 4, 4, 4), "uint8", new byte[3], 2.0));
    Path in = tmp.resolve("in");
    SparkTests.spark().createDataFrame(rows, schema).coalesce(1).write().parquet(in.toString());
    Path out = tmp.resolve("out");
    Map<String, String> conf = HardeningTest.identity(in, out, "device", "cpu", "input.rescale.slopeColumn", "slope",
        "badRecords.path", tmp.resolve("bad").toString());
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_QUARANTINED);
    List<JsonNode> lines = badRecords(tmp.resolve("bad"));
    assertThat(lines).extracting(l -> l.get("id").asText()).containsExactly("v0", "v1");
    assertThat(lines.get(0).get("rule").asText()).contains("rescale slope column 'slope' is null");
    assertThat(lines.get(1).get("rule").asText()).contains("data holds 3 bytes");
    // every record set aside: the output is there, with its schema and no row, as Spark writes an empty DataFrame
    assertThat(SparkTests.spark().read().parquet(out.toString()).count()).isZero();
    assertThat(SparkTests.spark().read().parquet(out.toString()).columns()).contains("id", "shape", "dtype", "data");
    assertNoSideFiles(out);
  }

  @Test
  void npyFilesThatBreakARuleAreSetAsideWhole(@TempDir Path tmp) throws Exception {
    Path in = BadInputTest.goodAndTruncatedNpy(tmp, "a.npy", "b-truncated.npy");
    SparkTests.writeNpy(in.resolve("c-flat.npy"), NpyArray.of(new long[] {6, 4}, new float[24]));
    Files.copy(in.resolve("a.npy"), in.resolve("d.npy"));
    Path out = tmp.resolve("out");
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "npy", out);
    conf.put(io.volpool.conf.VolpoolOptions.BAD_RECORDS_PATH.key(), tmp.resolve("bad").toString());
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_QUARANTINED);
    try (Stream<Path> s = Files.list(out)) {
      assertThat(s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".npy")).sorted())
          .containsExactly("a.npy", "d.npy");
    }
    List<JsonNode> lines = badRecords(tmp.resolve("bad"));
    assertThat(lines).extracting(l -> l.get("file").asText().replaceAll(".*/", ""))
        .containsExactlyInAnyOrder("b-truncated.npy", "c-flat.npy");
    assertThat(lines).allSatisfy(l -> assertThat(l.get("row").isNull()).isTrue());
    assertThat(lines).anySatisfy(l -> assertThat(l.get("rule").asText()).contains("not a readable .npy file"));
    assertThat(lines).anySatisfy(l -> assertThat(l.get("rule").asText()).contains("got shape [6, 4]"));
    assertNoSideFiles(out);
  }

  /** Input files of one good and one bad row each, {@code n} of them: a task per file. */
  static void goodAndBad(Path dir, int n) throws Exception {
    Files.createDirectories(dir);
    for (int i = 0; i < n; i++) {
      Path flat = dir.resolveSibling("flat-" + i);
      List<Row> rows = new ArrayList<>(HardeningTest.volumes("g" + i).collectAsList());
      rows.add(BadInputTest.row("b" + i, List.of(1, 4, 4, 4), "float32", new byte[i + 1]));
      SparkTests.spark().createDataFrame(rows, BadInputTest.BINARY).coalesce(1).write().parquet(flat.toString());
      try (var s = Files.list(flat)) {
        for (Path p : s.filter(p -> p.getFileName().toString().endsWith(".parquet")).toList()) {
          Files.copy(p, dir.resolve("f" + i + ".parquet"));
        }
      }
    }
  }

  /** The settings of a resumable run over {@code in}, a task per file, setting bad records aside in {@code bad}. */
  static Map<String, String> resumable(Path in, Path out, Path bad) {
    Map<String, String> conf = HardeningTest.identity(in, out, "device", "cpu", "output.mode", "resume");
    conf.put("spark.sql.files.maxPartitionBytes", "4096");
    conf.put("spark.sql.files.openCostInBytes", "4096");
    if (bad != null) {
      conf.put(io.volpool.conf.VolpoolOptions.BAD_RECORDS_PATH.key(), bad.toString());
    }
    return conf;
  }

  /** Runs {@code conf} killed (SIGKILL) once half its tasks committed. */
  static void killedAtHalf(Path tmp, Map<String, String> conf, String name) throws Exception {
    ChildJvm.Child killed = ChildJvm.start("1g", "local[2]", conf, tmp.resolve(name + ".log"),
        List.of("-D" + KillPoints.PROPERTY + "=" + KillPoints.HALF_TASKS + ":KILL"));
    assertThat(killed.waitFor(300)).as(killed.output()).isEqualTo(137);
  }

  @Test
  void aKilledRunIsResumedAndEachBadRecordIsSetAsideOnce(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    goodAndBad(in, 6);
    Path out = tmp.resolve("run/out");
    Path bad = tmp.resolve("bad");
    killedAtHalf(tmp, resumable(in, out, bad), "killed");
    assertThat(files(bad)).as("nothing is set aside before the job commits").isEmpty();

    SparkTests.Result r = SparkTests.run(resumable(in, out, bad));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_QUARANTINED);
    JsonNode summary = JSON.readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(summary.path("resumed").path("tasks_kept").asLong()).as("the killed run's committed tasks are kept, their"
        + " bad records with them: " + summary).isGreaterThanOrEqualTo(3);
    List<JsonNode> lines = badRecords(bad);
    assertThat(lines).extracting(l -> l.get("id").asText()).containsExactlyInAnyOrder("b0", "b1", "b2", "b3", "b4", "b5");
    assertThat(rows(out).keySet()).containsExactly("g0", "g1", "g2", "g3", "g4", "g5");
    assertThat(summary.get("bad_records").asLong()).isEqualTo(6);
    assertNoSideFiles(out);
    assertThat(CrashTest.leftovers(out.getParent())).isEmpty();

    // a retry of the complete output runs nothing and says again what its output set aside (its maker may have died
    // before it could)
    SparkTests.Result again = SparkTests.run(resumable(in, out, bad));
    assertThat(again.code()).as(again.err()).isEqualTo(VolpoolMain.EXIT_QUARANTINED);
    assertThat(again.err()).contains("6 bad records set aside in " + summary.get("bad_records_file").asText());
  }

  @Test
  void aResumeWithoutTheSettingRunsTheTasksThatSetRecordsAsideAgain(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    goodAndBad(in, 6);
    Path out = tmp.resolve("run/out");
    killedAtHalf(tmp, resumable(in, out, tmp.resolve("bad")), "killed");
    ChildJvm.Child strict = ChildJvm.start("1g", "local[2]", resumable(in, out, null), tmp.resolve("strict.log"));
    assertThat(strict.waitFor(300)).as(strict.output()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(strict.output()).contains("volpool: FAILED: bad record id=b").contains("runs again: it set 1 bad records"
        + " aside, and this run does not (spark.volpool.badRecords.path is unset)");
    assertThat(files(tmp.resolve("bad"))).isEmpty();
  }

  @Test
  void theSettingIsRefusedWhereItCannotHold(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    AppendTest.acrossRows(tmp, in, "v", "v");
    SparkTests.Result rows = SparkTests.run(HardeningTest.identity(in, tmp.resolve("out"), "device", "cpu",
        "badRecords.path", tmp.resolve("bad").toString()));
    assertThat(rows.code()).as(rows.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(rows.err()).contains("holds volumes stored across rows").contains("a volume cannot go on without one of"
        + " its rows");

    Path flat = tmp.resolve("flat");
    HardeningTest.volumes("a").coalesce(1).write().parquet(flat.toString());
    SparkTests.Result inside = SparkTests.run(HardeningTest.identity(flat, tmp.resolve("out2"), "device", "cpu",
        "badRecords.path", tmp.resolve("out2/bad").toString()));
    assertThat(inside.code()).as(inside.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(inside.err()).contains("overlaps spark.volpool.output=").contains("replaced with the output");

    Files.writeString(tmp.resolve("a-file"), "not a folder");
    SparkTests.Result unwritable = SparkTests.run(HardeningTest.identity(flat, tmp.resolve("out3"), "device", "cpu",
        "badRecords.path", tmp.resolve("a-file/bad").toString()));
    assertThat(unwritable.code()).as(unwritable.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(unwritable.err()).contains("spark.volpool.badRecords.path=" + tmp.resolve("a-file/bad"))
        .contains("volpool cannot write there");
    assertThat(tmp.resolve("out3")).as("refused before any work").doesNotExist();
  }

  @Test
  void appendsWhoseEveryNewRecordIsSetAsideAddNothing(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    goodAndBad(in, 1);
    Path out = tmp.resolve("out");
    Map<String, String> conf = HardeningTest.identity(in, out, "device", "cpu", "output.mode", "append",
        "badRecords.path", tmp.resolve("bad").toString());
    assertThat(SparkTests.run(conf).code()).isEqualTo(VolpoolMain.EXIT_QUARANTINED);
    for (String day : List.of("x", "y")) {
      // a day of bad records only: the output keeps its one good volume, and no empty part joins it
      Path flat = tmp.resolve("flat-" + day);
      SparkTests.spark().createDataFrame(List.of(BadInputTest.row("bad-" + day, List.of(1, 4, 4, 4), "float32",
          new byte[3])), BadInputTest.BINARY).coalesce(1).write().parquet(flat.toString());
      try (var s = Files.list(flat)) {
        for (Path p : s.filter(p -> p.getFileName().toString().endsWith(".parquet")).toList()) {
          Files.copy(p, in.resolve(day + ".parquet"));
        }
      }
      SparkTests.Result r = SparkTests.run(conf);
      assertThat(r.code()).as(day + ": " + r.err()).isEqualTo(VolpoolMain.EXIT_QUARANTINED);
    }
    assertThat(rows(out).keySet()).containsExactly("g0");
    assertNoSideFiles(out);
  }

  @Test
  void aRunThatFailsAfterGatheringLeavesNoBadRecordsFile(@TempDir Path tmp) throws Exception {
    Path in = BadInputTest.goodAndTruncatedNpy(tmp, "a.npy", "b-truncated.npy");
    // a batch of no volumes of 4 channels: its output is made at the commit, where the pipeline refuses the shape
    Files.write(in.resolve("c-empty.npy"), io.volpool.format.Npy.header(new long[] {0, 4, 16, 32, 32}));
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "npy", tmp.resolve("out"));
    conf.put(io.volpool.conf.VolpoolOptions.BAD_RECORDS_PATH.key(), tmp.resolve("bad").toString());
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("c-empty.npy");
    assertThat(files(tmp.resolve("bad"))).as("no bad records of a run that published nothing").isEmpty();
  }

  @Test
  void anS3TaskRecordTellsWhetherItSetRecordsAside(@TempDir Path tmp) throws Exception {
    org.apache.hadoop.fs.FileSystem fs = org.apache.hadoop.fs.FileSystem.getLocal(new org.apache.hadoop.conf.Configuration());
    Path with = tmp.resolve("task_1.pendingset");
    Path without = tmp.resolve("task_2.pendingset");
    Files.writeString(with, "{\"commits\":[{\"destinationKey\":\"out/part-r-00001.parquet\",\"uploadId\":\"u1\"},"
        + "{\"destinationKey\":\"out/" + QuarantinedRecord.FOLDER + "/task-00001.json\",\"uploadId\":\"u2\"}]}");
    Files.writeString(without, "{\"commits\":[{\"destinationKey\":\"out/part-r-00002.parquet\",\"uploadId\":\"u3\"}]}");
    assertThat(io.volpool.job.commit.OutputCommit.setsAside(fs, new org.apache.hadoop.fs.Path(with.toUri()))).isTrue();
    assertThat(io.volpool.job.commit.OutputCommit.setsAside(fs, new org.apache.hadoop.fs.Path(without.toUri()))).isFalse();
  }
}
