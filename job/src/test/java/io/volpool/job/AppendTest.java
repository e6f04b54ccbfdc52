package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spark.volpool.output.mode=append}, as a daily schedule over a growing folder uses it: three runs,
 * each after new files arrived, leave the output one run over the final folder makes, volume for volume;
 * a run with nothing new ends at once with 0 volumes (under 10 s of job time with 10,000 input files);
 * a changed input file and other settings are refused, naming them.
 */
class AppendTest {
  static Map<String, String> conf(Path in, Path out) {
    Map<String, String> conf = ResumeTest.conf(in, out);
    conf.put("spark.volpool.output.mode", "append");
    return conf;
  }

  static SparkTests.Result run(Map<String, String> conf) {
    return SparkTests.run(conf);
  }

  @Test
  void threeRunsOverAGrowingFolderEqualOneRunOverTheFinalFolder(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Path out = tmp.resolve("out/pooled");
    SampleData.write(SparkTests.spark(), in.resolve("day=1").toString(), 96, 2, 0);
    SparkTests.Result a = run(conf(in, out));
    assertThat(a.code()).as(a.err()).isZero();
    assertThat(ResumeTest.summary(out).get("appended").get("input_files_new").asInt()).isEqualTo(2);

    SampleData.write(SparkTests.spark(), in.resolve("day=2").toString(), 64, 2, 96);
    SparkTests.Result b = run(conf(in, out));
    assertThat(b.code()).as(b.err()).isZero();
    JsonNode appended = ResumeTest.summary(out).get("appended");
    assertThat(appended.get("input_files_new").asInt()).as("day2's files").isEqualTo(2);
    assertThat(appended.get("input_files_known").asInt()).as("day1's files").isEqualTo(2);
    assertThat(ResumeTest.summary(out).get("volumes_in").asInt()).as("only the new volumes are read").isEqualTo(64);

    SampleData.write(SparkTests.spark(), in.resolve("day=3").toString(), 32, 1, 160);
    SparkTests.Result c = run(conf(in, out));
    assertThat(c.code()).as(c.err()).isZero();

    // one run over the final folder (the output mirrors the input's day=N folders, as Spark reads partitions)
    Path once = tmp.resolve("once/pooled");
    SparkTests.Result whole = run(ResumeTest.conf(in, once));
    assertThat(whole.code()).as(whole.err()).isZero();
    Map<String, String> want = CrashTest.parquetChecksum(once);
    assertThat(want).hasSize(192);
    assertThat(CrashTest.parquetChecksum(out)).as("three appends against one run, volume for volume").isEqualTo(want);
    assertThat(SparkTests.spark().read().parquet(out.toString()).count()).as("each volume once").isEqualTo(192);
    assertThat(CrashTest.leftovers(out.getParent())).as("nothing of the runs beside the output").isEmpty();
    JsonNode manifest = new com.fasterxml.jackson.databind.ObjectMapper().readTree(
        out.resolve("_volpool_manifest.json").toFile());
    assertThat(manifest.get("files")).as("the manifest lists every input file").hasSize(5);
    assertThat(manifest.get("runs")).as("and the three runs").hasSize(3);

    // nothing new: ends at once, 0 volumes, the output untouched
    long before = Files.getLastModifiedTime(out.resolve(VolpoolJob.SUMMARY_FILE)).toMillis();
    SparkTests.Result none = run(conf(in, out));
    assertThat(none.code()).as(none.err()).isZero();
    assertThat(none.out() + none.err()).contains("nothing new");
    assertThat(Files.getLastModifiedTime(out.resolve(VolpoolJob.SUMMARY_FILE)).toMillis()).isEqualTo(before);

    // a processed file changed: refused, naming it; the output stays as it was
    Path changed;
    try (var s = Files.list(in.resolve("day=2"))) {
      changed = s.filter(p -> p.toString().endsWith(".parquet")).sorted().findFirst().orElseThrow();
    }
    Files.setLastModifiedTime(changed, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 60_000));
    SparkTests.Result refused = run(conf(in, out));
    assertThat(refused.code()).as("settings error").isEqualTo(2);
    assertThat(refused.err()).contains("input file(s) changed").contains("day=2/" + changed.getFileName());
    assertThat(CrashTest.parquetChecksum(out)).isEqualTo(want);

    // other settings: refused, naming the setting
    Files.setLastModifiedTime(changed, java.nio.file.attribute.FileTime.fromMillis(
        manifestModified(manifest, "day=2/" + changed.getFileName())));
    Map<String, String> other = conf(in, out);
    other.put("spark.volpool.avgpool3d.padding", "0");
    SparkTests.Result settings = run(other);
    assertThat(settings.code()).isEqualTo(2);
    assertThat(settings.err()).contains("was made with other settings").contains("padding=1").contains("padding=0");
  }

  /**
   * An append's .npy files (named by id: one flat folder) join the output's, names holding {@code :} too; a name the
   * output holds already is refused before any task runs, naming it, and the output stays as it was.
   */
  @Test
  void anAppendAddsNpyFilesToTheOutputAndRefusesANameItHolds(@TempDir Path tmp) throws Exception {
    Path day = tmp.resolve("in/day=1");
    Path out = tmp.resolve("out");
    Map<String, String> conf = HardeningTest.identity(tmp.resolve("in"), out, "output.format", "npy", "output.mode",
        "append");
    acrossRows(tmp, day, "a", "scan:1", "scan:2");
    SparkTests.Result a = run(conf);
    assertThat(a.code()).as(a.err()).isZero();
    assertThat(npy(out)).containsExactly("scan:1.npy", "scan:2.npy");

    acrossRows(tmp, day, "b", "scan:3");
    SparkTests.Result b = run(conf);
    assertThat(b.code()).as(b.err()).isZero();
    assertThat(npy(out)).containsExactly("scan:1.npy", "scan:2.npy", "scan:3.npy");

    byte[] kept = Files.readAllBytes(out.resolve("scan:1.npy"));
    acrossRows(tmp, day, "c", "scan:1");
    SparkTests.Result c = run(conf);
    // refused before any task runs: the output holds that volume's id
    assertThat(c.code()).as(c.out() + c.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(c.err()).contains("bad record id=scan:1: the output holds this volume already (scan:1.npy)");
    assertThat(npy(out)).containsExactly("scan:1.npy", "scan:2.npy", "scan:3.npy");
    assertThat(Files.readAllBytes(out.resolve("scan:1.npy"))).as("the old file, not the run's").isEqualTo(kept);
  }

  /**
   * Before it adds files, an append removes the .npy files a run that died in its commit left for the input
   * files it adds, and nothing else: a .npy a user put into the output stays.
   */
  @Test
  void anAppendRemovesOnlyWhatADeadAppendLeftForItsOwnFiles(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Path out = tmp.resolve("out");
    Files.createDirectories(in);
    // written with the header the job writes for float32: the identity's output file is its input file
    Files.write(in.resolve("a.npy"), concat(io.volpool.format.Npy.header(new long[] {1, 4, 4, 4}),
        NpyRangesTest.values("<f4", 64, 1)));
    Map<String, String> conf = HardeningTest.identity(in, out, "input.format", "npy", "output.format", "npy",
        "output.mode", "append");
    SparkTests.Result a = run(conf);
    assertThat(a.code()).as(a.err()).isZero();
    byte[] mine = {1, 2, 3};
    Files.write(out.resolve("mydata.npy"), mine);
    Files.write(in.resolve("b.npy"), concat(io.volpool.format.Npy.header(new long[] {1, 4, 4, 4}),
        NpyRangesTest.values("<f4", 64, 2)));
    Files.write(out.resolve("b.npy"), new byte[] {9}); // as a dead append's commit left it
    SparkTests.Result b = run(conf);
    assertThat(b.code()).as(b.err()).isZero();
    assertThat(Files.readAllBytes(out.resolve("mydata.npy"))).as("the user's file").isEqualTo(mine);
    assertThat(Files.mismatch(in.resolve("b.npy"), out.resolve("b.npy"))).as("b.npy: the identity's output").isEqualTo(-1L);
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] c = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }

  static java.util.List<String> npy(Path dir) throws Exception {
    return HardeningTest.names(dir).stream().filter(n -> n.endsWith(".npy")).toList();
  }

  /** Volumes of these ids (HardeningTest's), stored across rows, as new Parquet files {@code name-*} in {@code dir}. */
  static void acrossRows(Path tmp, Path dir, String name, String... ids) throws Exception {
    HardeningTest.volumes(ids).coalesce(1).write().parquet(tmp.resolve("flat-" + name).toString());
    SparkTests.Result r = SparkTests.run(HardeningTest.identity(tmp.resolve("flat-" + name), tmp.resolve("rows-" + name),
        "output.layout", "rows"));
    assertThat(r.code()).as(r.err()).isZero();
    Files.createDirectories(dir);
    try (var s = Files.list(tmp.resolve("rows-" + name))) {
      for (Path p : s.filter(p -> p.getFileName().toString().endsWith(".parquet")).toList()) {
        Files.copy(p, dir.resolve(name + "-" + p.getFileName()));
      }
    }
  }

  static long manifestModified(JsonNode manifest, String path) {
    for (JsonNode f : manifest.get("files")) {
      if (f.get("path").asText().equals(path)) {
        return f.get("modified").asLong();
      }
    }
    throw new AssertionError(path + " not in the manifest");
  }

  static final MessageType BINARY = MessageTypeParser.parseMessageType(
      "message m { optional binary id (STRING); optional group shape (LIST) { repeated group list {"
          + " optional int32 element; } } optional binary dtype (STRING); optional binary data; }");

  /** {@code n} Parquet files of one volume [1, 2, 2, 2] each, in folders of 1,000. */
  static void tinyFiles(Path dir, int n) throws Exception {
    SimpleGroupFactory f = new SimpleGroupFactory(BINARY);
    Configuration conf = new Configuration();
    for (int i = 0; i < n; i++) {
      Path p = dir.resolve("f" + i / 1000).resolve("v" + i + ".parquet");
      Files.createDirectories(p.getParent());
      ByteBuffer b = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
      for (int k = 0; k < 8; k++) {
        b.putFloat(i + k);
      }
      try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(p.toUri())).withConf(conf)
          .withType(BINARY).build()) {
        Group g = f.newGroup().append("id", "v" + i);
        Group list = g.addGroup("shape");
        for (int d : new int[] {1, 2, 2, 2}) {
          list.addGroup("list").append("element", d);
        }
        g.append("dtype", "float32").append("data", Binary.fromConstantByteArray(b.array()));
        w.write(g);
      }
    }
  }

  @Test
  void aRunWithNothingNewOverTenThousandFilesEndsInSeconds(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    tinyFiles(in, 10_000);
    Path out = tmp.resolve("out/pooled");
    Map<String, String> conf = HardeningTest.identity(in, out, "output.mode", "append");
    conf.put("spark.sql.files.openCostInBytes", "1024");
    SparkTests.Result first = run(conf);
    assertThat(first.code()).as(first.err()).isZero();
    assertThat(ResumeTest.summary(out).get("volumes_out").asInt()).isEqualTo(10_000);
    long t0 = System.nanoTime();
    SparkTests.Result none = run(conf);
    double secs = (System.nanoTime() - t0) / 1e9;
    assertThat(none.code()).as(none.err()).isZero();
    assertThat(none.out()).contains("nothing new").contains("input files known 10000");
    System.out.println("append test: a run with nothing new over 10,000 files took " + secs + " s");
    assertThat(secs).as("the run with nothing new, in the test's Spark session").isLessThan(10);
  }
}
