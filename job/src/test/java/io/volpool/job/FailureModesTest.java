package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.testing.Golden;
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
 * What users and hostile inputs did to earlier versions: each case ends in one volpool line naming
 * the cause and the fix, with the documented exit code, or simply works.
 */
class FailureModesTest {
  static final Golden.Case SEED = Golden.get("pipeline_seed");

  @Test
  void colonsInFileAndFolderNamesWork(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("npy");
    Files.createDirectories(in.resolve("t=12:00"));
    Files.copy(SEED.dir().resolve("input.npy"), in.resolve("t=12:00/a:b.npy"));
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(JobEndToEndTest.seedConf(in, "npy", out));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(out.resolve("t=12:00/a:b.npy")).exists();
    Path pq = tmp.resolve("pq/t=12:00");
    Files.createDirectories(pq);
    Files.copy(SEED.dir().resolve("volumes_binary.parquet"), pq.resolve("p:1.parquet"));
    Path out2 = tmp.resolve("out2");
    SparkTests.Result r2 = SparkTests.run(JobEndToEndTest.seedConf(tmp.resolve("pq"), "parquet", out2));
    assertThat(r2.code()).as(r2.err()).isZero();
    try (var s = Files.list(out2.resolve("t=12:00"))) {
      assertThat(s.anyMatch(p -> p.getFileName().toString().endsWith(".parquet"))).as("the input's folder is kept").isTrue();
    }
  }

  @Test
  void aFileThatIsNotParquetIsNamed(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Files.createDirectories(in);
    Files.copy(SEED.dir().resolve("volumes_binary.parquet"), in.resolve("a.parquet"));
    Files.writeString(in.resolve("notes.txt"), "not parquet");
    SparkTests.Result r = SparkTests.run(JobEndToEndTest.seedConf(in, "parquet", tmp.resolve("out")));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("notes.txt: not a readable Parquet file").contains("name them _x or .x to hide them")
        .doesNotContain("\tat ");
  }

  @Test
  void weightsThatAreAFolderAreASettingsError(@TempDir Path tmp) throws Exception {
    Map<String, String> conf = JobEndToEndTest.seedConf(SEED.dir().resolve("volumes_binary.parquet"), "parquet",
        tmp.resolve("out"));
    Files.createDirectories(tmp.resolve("models/fused.safetensors"));
    conf.put("spark.volpool.fused.weights", tmp.resolve("models/fused.safetensors").toString());
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("spark.volpool.fused.weights=").contains("is a folder");
  }

  @Test
  void settingsOutOfRangeAndTyposOfThePrefixAreNamed(@TempDir Path tmp) {
    Map<String, String> conf = JobEndToEndTest.seedConf(SEED.dir().resolve("volumes_binary.parquet"), "parquet",
        tmp.resolve("out"));
    conf.put("spark.volpool.cpu.threads", "40000");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("spark.volpool.cpu.threads must be at most 4096, got 40000").doesNotContain("null");
    conf.remove("spark.volpool.cpu.threads");
    conf.put("spark.volpol.batchSize", "4");
    SparkTests.Result typo = SparkTests.run(conf);
    assertThat(typo.code()).as(typo.err()).isZero();
    assertThat(typo.err()).contains("setting spark.volpol.batchSize looks like a volpool setting")
        .contains("Did you mean spark.volpool.batchSize?");
  }

  @Test
  void aFileOutputOnAClusterMasterIsRefusedBeforeAnythingStarts(@TempDir Path tmp) {
    Map<String, String> conf = JobEndToEndTest.seedConf(SEED.dir().resolve("volumes_binary.parquet"), "parquet",
        tmp.resolve("out"));
    conf.put("spark.master", "spark://127.0.0.1:1");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("is on the local filesystem but the job runs on the cluster spark://127.0.0.1:1")
        .contains("spark.volpool.output.sharedFilesystem=true");
  }

  @Test
  void hiddenAndEmptyNpyFilesAreReportedNotSkippedSilently(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    Files.createDirectories(in);
    Files.copy(SEED.dir().resolve("input.npy"), in.resolve("A.NPY"));
    Files.copy(SEED.dir().resolve("input.npy"), in.resolve("_draft.npy"));
    Files.copy(SEED.dir().resolve("input.npy"), in.resolve(".x.npy"));
    Files.writeString(in.resolve("readme.txt"), "x");
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(JobEndToEndTest.seedConf(in, "npy", out));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(out.resolve("A.NPY")).as("upper-case extension taken").exists();
    JsonNode skipped = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile()).get("skipped_files");
    assertThat(skipped.toString()).contains("_draft.npy (hidden").contains(".x.npy (hidden").contains("readme.txt (not .npy)");
    assertThat(r.out()).contains("3 file(s) skipped");
    Files.write(in.resolve("empty.npy"), new byte[0]);
    SparkTests.Result empty = SparkTests.run(JobEndToEndTest.seedConf(in, "npy", tmp.resolve("out2")));
    assertThat(empty.code()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(empty.err()).contains("empty.npy").contains("file is 0 bytes");
  }

  @Test
  void impossibleSettingsForAFixedShapeColumnAreASettingsError(@TempDir Path tmp) {
    Map<String, String> conf = JobEndToEndTest.seedConf(SEED.dir().resolve("volumes_fixed_shape_tensor.parquet"), "parquet",
        tmp.resolve("out"));
    conf.put("spark.volpool.pipeline", "avgpool3d");
    conf.put("spark.volpool.avgpool3d.kernelSize", "40");
    conf.put("spark.volpool.avgpool3d.padding", "0");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("has shape [3, 16, 32, 32], which the pipeline cannot take");
  }

  @Test
  void classesNamedInAFooterAreNeverLoaded(@TempDir Path tmp) throws Exception {
    MessageType schema = MessageTypeParser.parseMessageType("message m { required binary id (STRING); required group shape"
        + " (LIST) { repeated group list { required int32 element; } } required binary dtype (STRING); required binary data; }");
    String sparkSchema = "{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":{\"type\":\"udt\",\"class\":\""
        + EvilUdt.class.getName() + "\",\"pyClass\":null,\"sqlType\":\"string\"},\"nullable\":false,\"metadata\":{}}]}";
    Path in = tmp.resolve("in");
    Files.createDirectories(in);
    byte[] vol = new byte[3 * 16 * 32 * 32 * 4];
    ByteBuffer.wrap(vol).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(SEED.input().toFloatArray(), 0, vol.length / 4);
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(in.resolve("x.parquet").toUri()))
        .withConf(new Configuration()).withType(schema)
        .withExtraMetaData(Map.of("org.apache.spark.sql.parquet.row.metadata", sparkSchema)).build()) {
      Group g = new SimpleGroupFactory(schema).newGroup().append("id", "v0");
      Group s = g.addGroup("shape");
      for (int d : new int[] {3, 16, 32, 32}) {
        s.addGroup("list").append("element", d);
      }
      w.write(g.append("dtype", "float32").append("data", Binary.fromConstantByteArray(vol)));
    }
    System.clearProperty("volpool.test.evilLoaded");
    SparkTests.Result r = SparkTests.run(JobEndToEndTest.seedConf(in, "parquet", tmp.resolve("out")));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(System.getProperty("volpool.test.evilLoaded")).as("volpool loaded a class named in a footer").isNull();
    // the file is hostile: Spark's own reader does load the class
    try {
      SparkTests.spark().read().parquet(in.toString()).schema();
    } catch (RuntimeException expected) {
      // it is not a real UDT; what matters is that its static initializer ran
    }
    assertThat(System.getProperty("volpool.test.evilLoaded")).as("the test file names a class Spark loads").isEqualTo("true");
  }
}
