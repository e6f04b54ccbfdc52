package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.testing.Golden;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * mode=overwrite never deletes or re-reads the job's own input: an output that is the input, contains
 * it or lies inside it is refused with exit 2 before anything is touched, however the paths are spelt.
 */
class OutputGuardTest {
  static final Golden.Case SEED = Golden.get("pipeline_seed");

  /** A Parquet input dataset in {@code dir/data/in} and a checksum of what is there. */
  static Path parquetInput(Path dir) throws Exception {
    Path in = dir.resolve("data/in");
    Files.createDirectories(in);
    Files.copy(SEED.dir().resolve("volumes_binary.parquet"), in.resolve("part-0.parquet"));
    return in;
  }

  static SparkTests.Result overwrite(Path in, String format, String out) {
    Map<String, String> conf = JobEndToEndTest.seedConf(in, format, Path.of("unused"));
    conf.put("spark.volpool.output", out);
    conf.put("spark.volpool.output.mode", "overwrite");
    return SparkTests.run(conf);
  }

  static void assertRefused(SparkTests.Result r, String rule, Path in, long filesBefore) throws Exception {
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains(rule).contains("spark.volpool.output=").contains("spark.volpool.input=" + in);
    try (var s = Files.walk(in)) {
      assertThat(s.filter(Files::isRegularFile).count()).as("input untouched").isEqualTo(filesBefore);
    }
  }

  @Test
  void outputEqualToTheInputIsRefused(@TempDir Path tmp) throws Exception {
    Path in = parquetInput(tmp);
    assertRefused(overwrite(in, "parquet", in.toString()), "is the same path as", in, 1);
    // the same directory spelt differently: a file: URI, a trailing slash, a detour through ..
    assertRefused(overwrite(in, "parquet", "file:" + in), "is the same path as", in, 1);
    assertRefused(overwrite(in, "parquet", in + "/"), "is the same path as", in, 1);
    assertRefused(overwrite(in, "parquet", in.getParent().resolve("x/../in").toString()), "is the same path as", in, 1);
    assertThat(in.resolve("part-0.parquet")).hasSameBinaryContentAs(SEED.dir().resolve("volumes_binary.parquet"));
  }

  @Test
  void outputAboveTheInputIsRefused(@TempDir Path tmp) throws Exception {
    Path in = parquetInput(tmp);
    assertRefused(overwrite(in, "parquet", tmp.resolve("data").toString()), "contains", in, 1);
    assertRefused(overwrite(in, "parquet", tmp.toString()), "contains", in, 1);
  }

  @Test
  void outputInsideAnNpyInputIsRefused(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("npy");
    Files.createDirectories(in);
    Files.copy(SEED.dir().resolve("input.npy"), in.resolve("v.npy"));
    SparkTests.Result r = overwrite(in, "npy", in.resolve("out").toString());
    assertRefused(r, "lies inside", in, 1);
    assertThat(r.err()).contains("read its own output as input");
    assertThat(in.resolve("out")).doesNotExist();
  }

  @Test
  void symbolicLinkToTheInputIsTheInput(@TempDir Path tmp) throws Exception {
    Path in = parquetInput(tmp);
    Path link = Files.createSymbolicLink(tmp.resolve("alias"), in);
    assertRefused(overwrite(in, "parquet", link.toString()), "is the same path as", in, 1);
    Path parentLink = Files.createSymbolicLink(tmp.resolve("up"), tmp.resolve("data"));
    assertRefused(overwrite(in, "parquet", parentLink.toString()), "contains", in, 1);
  }

  @Test
  void outputHoldingTheModelIsRefused(@TempDir Path tmp) throws Exception {
    Path in = parquetInput(tmp);
    Path models = tmp.resolve("models");
    Files.createDirectories(models);
    Files.copy(SEED.model(), models.resolve("m.safetensors"));
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "parquet", models);
    conf.put("spark.volpool.fused.weights", models.resolve("m.safetensors").toString());
    conf.put("spark.volpool.output.mode", "overwrite");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("contains spark.volpool.fused.weights=");
    assertThat(models.resolve("m.safetensors")).exists();
  }

  @Test
  void aSiblingOutputWithACommonPrefixIsAllowed(@TempDir Path tmp) throws Exception {
    Path in = parquetInput(tmp);
    // data/in-pooled starts with the string data/in but is not inside it
    SparkTests.Result r = overwrite(in, "parquet", tmp.resolve("data/in-pooled").toString());
    assertThat(r.code()).as(r.err()).isZero();
    JobEndToEndTest.assertMatchesExpected(tmp.resolve("data/in-pooled"));
  }

  /**
   * An output on an object store without a safe commit here is refused before anything is read or
   * written, naming why (a rename-based commit is a copy and a delete there) and what to do instead;
   * no connector is needed to say so. s3:// and s3n:// are told to use s3a://, whose magic committer
   * volpool commits with (S3IT).
   */
  @Test
  void anOutputOnAnObjectStoreWithoutASafeCommitIsRefusedBeforeAnyWork(@TempDir Path tmp) throws Exception {
    Path in = parquetInput(tmp);
    for (String out : java.util.List.of("gs://bucket/pooled", "abfss://c@acct.dfs.core.windows.net/p")) {
      SparkTests.Result r = overwrite(in, "parquet", out);
      assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
      assertThat(r.err()).contains("spark.volpool.output=" + out + " is on an object store")
          .contains("a rename there is a copy and a delete").contains("hadoop distcp").contains("s3a://")
          .doesNotContain("No FileSystem for scheme");
    }
    for (String out : java.util.List.of("s3://bucket/pooled", "s3n://bucket/pooled")) {
      SparkTests.Result r = overwrite(in, "parquet", out);
      assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
      assertThat(r.err()).contains("spark.volpool.output=" + out + ": write to S3 through s3a://");
    }
  }
}
