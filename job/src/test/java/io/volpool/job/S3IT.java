package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.s3a.S3AFileStatus;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job on S3: an S3 server in this JVM (s3proxy on a local folder, its "filesystem" store), read
 * and written through S3A (hadoop-aws 3.4.1) as on a cluster. Input from s3a:// and output to
 * s3a:// committed with S3A's magic committer, and on those paths the overwrite guard, committed
 * counts, the status file, a killed run that leaves nothing a reader would take for output and whose
 * uncompleted uploads the next run aborts, multipart uploads, and the refusal of a bucket whose
 * magic committer is off. Runs in mvn verify (failsafe).
 *
 * <p>s3proxy's store lacks ListMultipartUploads (HTTP 501), which Hadoop's committer uses only for its
 * best-effort clean-up; volpool aborts a run's uploads from the run's own records instead, and the test
 * sees pending uploads as the store keeps them, {@code .mpus-UPLOADID-...} entries in its folder.
 */
class S3IT {
  static final String BUCKET = "volpool";
  /** A bucket whose magic committer is switched off, as a user's bucket settings might. */
  static final String NO_MAGIC = "volpool-nomagic";
  static S3Proxy proxy;
  static Path store;
  static FileSystem fs;
  static Map<String, String> s3a = new LinkedHashMap<>();

  @BeforeAll
  static void startS3(@TempDir Path tmp) throws Exception {
    store = tmp.resolve("store");
    Files.createDirectories(store);
    Properties p = new Properties();
    p.setProperty("jclouds.filesystem.basedir", store.toString());
    BlobStoreContext ctx = ContextBuilder.newBuilder("filesystem").credentials("identity", "credential").overrides(p)
        .build(BlobStoreContext.class);
    ctx.getBlobStore().createContainerInLocation(null, BUCKET);
    ctx.getBlobStore().createContainerInLocation(null, NO_MAGIC);
    proxy = S3Proxy.builder().blobStore(ctx.getBlobStore()).endpoint(URI.create("http://127.0.0.1:0"))
        .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, "access", "secret").build();
    proxy.start();
    for (int i = 0; i < 500 && !proxy.getState().equals("STARTED"); i++) {
      Thread.sleep(10);
    }
    s3a.put("fs.s3a.endpoint", "http://127.0.0.1:" + proxy.getPort());
    s3a.put("fs.s3a.endpoint.region", "us-east-1");
    s3a.put("fs.s3a.path.style.access", "true");
    s3a.put("fs.s3a.access.key", "access");
    s3a.put("fs.s3a.secret.key", "secret");
    s3a.put("fs.s3a.connection.ssl.enabled", "false");
    // parts of 5 MiB (S3's smallest): the outputs here take several
    s3a.put("fs.s3a.multipart.size", "5M");
    s3a.put("fs.s3a.multipart.threshold", "5M");
    s3a.put("fs.s3a.attempts.maximum", "2");
    s3a.put("fs.s3a.retry.limit", "2");
    s3a.put("fs.s3a.bucket." + NO_MAGIC + ".committer.magic.enabled", "false");
    Configuration hc = SparkTests.spark().sparkContext().hadoopConfiguration();
    s3a.forEach(hc::set);
    fs = new org.apache.hadoop.fs.Path("s3a://" + BUCKET + "/").getFileSystem(hc);
  }

  @AfterAll
  static void stopS3() throws Exception {
    if (proxy != null) {
      proxy.stop();
    }
  }

  static org.apache.hadoop.fs.Path s3(String rel) {
    return new org.apache.hadoop.fs.Path("s3a://" + BUCKET + "/" + rel);
  }

  /**
   * Uploads a local file, or a folder's files, through S3A's output stream (S3A's copyFromLocalFile
   * goes through the SDK's transfer manager, whose upload s3proxy refuses with 501: "A header you
   * provided implies functionality that is not implemented").
   */
  static void put(Path local, String rel) throws Exception {
    if (Files.isDirectory(local)) {
      try (Stream<Path> s = Files.walk(local)) {
        for (Path f : s.filter(Files::isRegularFile).toList()) {
          put(f, rel + "/" + local.relativize(f).toString().replace('\\', '/'));
        }
      }
      return;
    }
    try (var os = fs.create(s3(rel), true)) {
      Files.copy(local, os);
    }
  }

  static String read(org.apache.hadoop.fs.Path p) throws Exception {
    try (InputStream in = fs.open(p)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** Names beside {@code rel}'s entries in its folder, as S3 lists them. */
  static List<String> names(String rel) throws Exception {
    List<String> out = new ArrayList<>();
    for (FileStatus s : fs.listStatus(rel.isEmpty() ? s3("") : s3(rel))) {
      // s3proxy's folder store lists a folder emptied of objects as a prefix that does not exist
      if (fs.exists(s.getPath())) {
        out.add(s.getPath().getName());
      }
    }
    return out;
  }

  /** Every object under {@code rel}, recursively (what a reader listing the output finds). */
  static List<String> objects(String rel) throws Exception {
    List<String> out = new ArrayList<>();
    if (!fs.exists(s3(rel))) {
      return out;
    }
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(s3(rel), true);
    while (it.hasNext()) {
      out.add(it.next().getPath().toString());
    }
    return out;
  }

  /**
   * The ids of multipart uploads started and neither completed nor aborted, as the store keeps them
   * (a folder {@code .mpus-UPLOADID-FIRSTKEYSEGMENT} of parts).
   */
  static java.util.Set<String> pendingUploads() throws Exception {
    try (Stream<Path> s = Files.list(store.resolve(BUCKET))) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(".mpus-"))
          .map(n -> n.substring(".mpus-".length(), ".mpus-".length() + 36)).collect(java.util.stream.Collectors.toSet());
    }
  }

  /** The upload ids a run's tasks recorded under {@code outRel} (the magic committer's .pending and .pendingset files). */
  static java.util.Set<String> recordedUploads(String outRel) throws Exception {
    java.util.Set<String> ids = new java.util.HashSet<>();
    Path dir = store.resolve(BUCKET).resolve(outRel);
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.filter(p -> p.toString().endsWith(".pending") || p.toString().endsWith(".pendingset")).toList()) {
        JsonNode j = new ObjectMapper().readTree(p.toFile());
        for (JsonNode c : p.toString().endsWith(".pendingset") ? j.path("commits") : List.of(j)) {
          ids.add(c.get("uploadId").asText());
        }
      }
    }
    return ids;
  }

  static Map<String, String> withPaths(String in, String format, String out) {
    Map<String, String> conf = JobEndToEndTest.seedConf(Path.of("x"), format, Path.of("y"));
    conf.put("spark.volpool.input", in);
    conf.put("spark.volpool.output", out);
    return conf;
  }

  @Test
  void parquetAndNpyFromS3ToS3EqualLocalRunsAndLeaveNothingBehind(@TempDir Path tmp) throws Exception {
    java.util.Set<String> pendingBefore = pendingUploads();
    put(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), "in-pq/date=2026-12-01/a.parquet");
    String out = "s3a://" + BUCKET + "/out-pq";
    SparkTests.Result r = SparkTests.run(withPaths("s3a://" + BUCKET + "/in-pq", "parquet", out));
    assertThat(r.code()).as(r.err()).isZero();
    SparkTests.Result local = SparkTests.run(JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir()
        .resolve("volumes_binary.parquet"), "parquet", tmp.resolve("local")));
    assertThat(local.code()).as(local.err()).isZero();
    assertThat(HdfsIT.checksum(out)).isEqualTo(HdfsIT.checksum(tmp.resolve("local").toString())).hasSize(2);
    assertThat(fs.exists(s3("out-pq/date=2026-12-01"))).as("the input's folder is kept").isTrue();
    JsonNode summary = new ObjectMapper().readTree(read(s3("out-pq/" + VolpoolJob.SUMMARY_FILE)));
    assertThat(summary.get("volumes_out").asLong()).isEqualTo(2);
    assertThat(summary.get("files_out").asLong()).isEqualTo(1);
    assertThat(summary.get("output").asText()).isEqualTo(out);
    JsonNode status = new ObjectMapper().readTree(read(s3(".out-pq.volpool-status.json")));
    assertThat(status.get("status").asText()).isEqualTo("succeeded");
    assertThat(names("out-pq")).as("no upload records left in the output").noneMatch(n -> n.startsWith("__magic"));
    assertThat(names("")).as("no owner file or lock left beside the output")
        .noneMatch(n -> n.contains("volpool-staging") || n.contains("volpool-commit"));
    assertThat(pendingUploads()).as("every upload completed").isSubsetOf(pendingBefore);

    put(JobEndToEndTest.SEED.dir().resolve("input.npy"), "in-npy/sub/v.npy");
    r = SparkTests.run(withPaths("s3a://" + BUCKET + "/in-npy", "npy", "s3a://" + BUCKET + "/out-npy"));
    assertThat(r.code()).as(r.err()).isZero();
    SparkTests.Result localNpy = SparkTests.run(JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir().resolve("input.npy"),
        "npy", tmp.resolve("local-npy")));
    assertThat(localNpy.code()).as(localNpy.err()).isZero();
    try (InputStream in = fs.open(s3("out-npy/sub/v.npy"))) {
      assertThat(in.readAllBytes()).isEqualTo(Files.readAllBytes(tmp.resolve("local-npy/input.npy")));
    }
    assertThat(pendingUploads()).isSubsetOf(pendingBefore);
  }

  /**
   * .npy output of a volume spread over tasks, on S3: each range task uploads its planes as part objects (through
   * the magic committer, with its task), and once every task committed the driver joins each file's parts by copies
   * inside S3 (UploadPartCopy) into one multipart upload. The file equals the same job's in one task byte for byte
   * and is made of exactly one copied piece per range task (its ETag). Parts under S3's 5 MiB are joined through
   * the driver instead, to the same bytes.
   */
  @Test
  void npyRangesOnS3AreJoinedByCopiesInsideS3(@TempDir Path tmp) throws Exception {
    java.util.Set<String> pendingBefore = pendingUploads();
    io.volpool.op.VolumeShape big = new io.volpool.op.VolumeShape(1, 96, 256, 256); // 24 MiB of float32
    NpyRangesTest.writeNpy(tmp.resolve("in/big.npy"), "<f4", new long[] {1, 96, 256, 256},
        NpyRangesTest.values("<f4", big.numel(), 7));
    Path whole = tmp.resolve("whole");
    SparkTests.Result one = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", whole.toString(), "output.format", "npy", "pipeline", "identity", "device", "cpu",
        "input.spreadVolumes", "false"));
    assertThat(one.code()).as(one.err()).isZero();
    put(tmp.resolve("in"), "copies/in");
    Map<String, String> conf = SparkTests.conf("input", "s3a://" + BUCKET + "/copies/in", "input.format", "npy",
        "output", "s3a://" + BUCKET + "/copies/out", "output.format", "npy", "pipeline", "identity", "device", "cpu",
        "spark.sql.files.maxPartitionBytes", String.valueOf(8L << 20), "spark.sql.files.openCostInBytes", "0");
    s3a.forEach((k, v) -> conf.put("spark.hadoop." + k, v));
    ChildJvm.Child c = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("copies.log"));
    assertThat(c.waitFor(300)).as(c.output()).isZero();
    int tasks = NpyOutputInPlaceTest.rangeTasks(c.output());
    assertThat(tasks).as("range tasks").isGreaterThanOrEqualTo(2);
    assertThat(c.output()).contains("parts of s3a://" + BUCKET + "/copies/out/big.npy by copies inside S3");
    try (InputStream in = fs.open(s3("copies/out/big.npy"))) {
      assertThat(in.readAllBytes()).as("the .npy joined by copies").isEqualTo(Files.readAllBytes(whole.resolve("big.npy")));
    }
    assertThat(((S3AFileStatus) fs.getFileStatus(s3("copies/out/big.npy"))).getEtag())
        .as("a multipart upload of one piece per range task").matches("\"?[0-9a-f]+-" + tasks + "\"?");
    assertThat(objects("copies/out")).as("no parts or markers left").noneMatch(o ->
        o.contains(io.volpool.io.npy.NpyPlanesInPlace.PARTS) || o.contains(io.volpool.io.npy.NpyPlanesInPlace.MARKERS));
    assertThat(pendingUploads()).as("every upload completed").isSubsetOf(pendingBefore);

    // parts of a few KiB: joined through the driver
    io.volpool.op.VolumeShape s = new io.volpool.op.VolumeShape(2, 256, 32, 32);
    NpyRangesTest.writeNpy(tmp.resolve("small/v.npy"), "<i2", new long[] {s.c(), s.d(), s.h(), s.w()},
        NpyRangesTest.values("<i2", s.numel(), 8));
    Path wholeSmall = tmp.resolve("whole-small");
    one = SparkTests.run(SparkTests.conf("input", tmp.resolve("small").toString(), "input.format", "npy", "output",
        wholeSmall.toString(), "output.format", "npy", "pipeline", "avgpool3d", "device", "cpu", "input.spreadVolumes",
        "false"));
    assertThat(one.code()).as(one.err()).isZero();
    put(tmp.resolve("small"), "copies/small");
    Map<String, String> small = SparkTests.conf("input", "s3a://" + BUCKET + "/copies/small", "input.format", "npy",
        "output", "s3a://" + BUCKET + "/copies/small-out", "output.format", "npy", "pipeline", "avgpool3d", "device",
        "cpu", "spark.sql.files.maxPartitionBytes", "300000", "spark.sql.files.openCostInBytes", "0");
    s3a.forEach((k, v) -> small.put("spark.hadoop." + k, v));
    ChildJvm.Child cs = ChildJvm.start("2g", "local[2]", small, tmp.resolve("small.log"));
    assertThat(cs.waitFor(300)).as(cs.output()).isZero();
    assertThat(NpyOutputInPlaceTest.rangeTasks(cs.output())).isGreaterThanOrEqualTo(2);
    assertThat(cs.output()).contains("through the driver");
    try (InputStream in = fs.open(s3("copies/small-out/v.npy"))) {
      assertThat(in.readAllBytes()).as("the .npy joined through the driver")
          .isEqualTo(Files.readAllBytes(wholeSmall.resolve("v.npy")));
    }
    assertThat(pendingUploads()).as("every upload completed").isSubsetOf(pendingBefore);
  }

  @Test
  void theOverwriteGuardOnS3() throws Exception {
    java.util.Set<String> pendingBefore = pendingUploads();
    put(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), "guard/in/a.parquet");
    String in = "s3a://" + BUCKET + "/guard/in";
    SparkTests.Result r = SparkTests.run(withPaths(in, "parquet", in + "/nested"));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("lies inside");
    String out = "s3a://" + BUCKET + "/guard/out";
    r = SparkTests.run(withPaths(in, "parquet", out));
    assertThat(r.code()).as(r.err()).isZero();
    // the output exists: errorifexists refuses and leaves it as it was
    List<String> before = objects("guard/out");
    r = SparkTests.run(withPaths(in, "parquet", out));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("already exists");
    assertThat(objects("guard/out")).isEqualTo(before);
    // overwrite replaces it whole: a file of the old output that the new run does not write is gone too
    try (var os = fs.create(s3("guard/out/part-r-99999.parquet"))) {
      os.write(Files.readAllBytes(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet")));
    }
    Map<String, String> over = withPaths(in, "parquet", out);
    over.put("spark.volpool.output.mode", "overwrite");
    r = SparkTests.run(over);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(objects("guard/out")).as("the old output's own file is gone").noneMatch(n -> n.endsWith("part-r-99999.parquet"));
    assertThat(HdfsIT.checksum(out)).hasSize(2);
    assertThat(names("guard")).containsExactlyInAnyOrder("in", "out", ".out.volpool-status.json");
    assertThat(pendingUploads()).isSubsetOf(pendingBefore);
  }

  @Test
  void aBucketWithoutTheMagicCommitterIsRefusedBeforeAnyWork() throws Exception {
    put(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), "nomagic-in/a.parquet");
    SparkTests.Result r = SparkTests.run(withPaths("s3a://" + BUCKET + "/nomagic-in", "parquet",
        "s3a://" + NO_MAGIC + "/out"));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("spark.volpool.output=s3a://" + NO_MAGIC + "/out: S3A's magic committer is switched off");
    assertThat(new org.apache.hadoop.fs.Path("s3a://" + NO_MAGIC + "/out").getFileSystem(
        SparkTests.spark().sparkContext().hadoopConfiguration()).exists(new org.apache.hadoop.fs.Path("s3a://" + NO_MAGIC
        + "/out"))).as("nothing written").isFalse();
  }

  /** Task commits of a run on {@code out}: the magic committer's .pendingset records, as the store keeps them. */
  static long committedTasks(String outRel) throws Exception {
    Path dir = store.resolve(BUCKET).resolve(outRel);
    if (!Files.isDirectory(dir)) {
      return 0;
    }
    // the running job deletes its task attempts' folders while this walks them: a folder gone mid-walk is skipped
    long[] n = {0};
    Files.walkFileTree(dir, new java.nio.file.SimpleFileVisitor<>() {
      @Override
      public java.nio.file.FileVisitResult visitFile(Path p, java.nio.file.attribute.BasicFileAttributes a) {
        if (p.getFileName().toString().endsWith(".pendingset")) {
          n[0]++;
        }
        return java.nio.file.FileVisitResult.CONTINUE;
      }

      @Override
      public java.nio.file.FileVisitResult visitFileFailed(Path p, java.io.IOException e) throws java.io.IOException {
        if (e instanceof java.nio.file.NoSuchFileException) {
          return java.nio.file.FileVisitResult.CONTINUE;
        }
        throw e;
      }
    });
    return n[0];
  }

  @Test
  void aKilledRunOnS3LeavesNoOutputAndItsRerunEqualsACleanRunInMultipartUploads(@TempDir Path tmp) throws Exception {
    Path local = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), local.toString(), 2048, 8);
    put(local, "kill/in");
    Map<String, String> conf = withPaths("s3a://" + BUCKET + "/kill/in", "parquet", "s3a://" + BUCKET + "/kill/out");
    conf.put("spark.volpool.fused.weights", Path.of("../conf/models/fused_seed.safetensors").toAbsolutePath().toString());
    conf.put("spark.volpool.output.mode", "overwrite");
    conf.put("spark.volpool.device", "cpu");
    s3a.forEach((k, v) -> conf.put("spark.hadoop." + k, v));
    ChildJvm.Child clean = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("clean.log"));
    assertThat(clean.waitFor(300)).as(clean.output()).isZero();
    String out = "s3a://" + BUCKET + "/kill/out";
    Map<String, String> want = HdfsIT.checksum(out);
    assertThat(want).hasSize(2048);
    // large outputs go up in parts: a file of several 5 MiB parts has the ETag of a multipart upload ("...-N")
    List<String> etags = new ArrayList<>();
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(s3("kill/out"), true);
    long largest = 0;
    while (it.hasNext()) {
      LocatedFileStatus f = it.next();
      if (f.getPath().getName().endsWith(".parquet")) {
        largest = Math.max(largest, f.getLen());
        etags.add(((S3AFileStatus) fs.getFileStatus(f.getPath())).getEtag());
      }
    }
    assertThat(largest).as("an output file larger than one part").isGreaterThan(5L << 20);
    assertThat(etags).as("ETags of the output files").anyMatch(e -> e.matches("\"?[0-9a-f]+-([2-9]|[1-9][0-9]+)\"?"));
    fs.delete(s3("kill/out"), true);

    ChildJvm.Child run = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("kill.log"));
    long started = System.nanoTime();
    while (committedTasks("kill/out") == 0) {
      assertThat(run.process().isAlive()).as("the run ended before any task committed; " + run.output()).isTrue();
      assertThat(System.nanoTime() - started).as("no task committed within 300 s").isLessThan(300_000_000_000L);
      Thread.sleep(20);
    }
    assertThat(run.process().isAlive()).isTrue();
    run.process().destroyForcibly().waitFor();
    // what a reader listing the output finds: no data file, no summary (only the killed run's upload records)
    assertThat(objects("kill/out")).as("objects a reader would find after the kill")
        .allMatch(o -> o.contains("/__magic_job-"));
    assertThat(io.volpool.job.commit.OutputCommit.exists(fs, s3("kill/out"))).as("the killed run's output is not an output").isFalse();
    java.util.Set<String> recorded = recordedUploads("kill/out");
    java.util.Set<String> pending = pendingUploads();
    assertThat(recorded).as("uploads the killed run's tasks recorded").isNotEmpty();
    assertThat(pending).as("the killed run's uploads are pending, invisible").containsAll(recorded);
    ChildJvm.Child rerun = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("rerun.log"));
    assertThat(rerun.waitFor(300)).as(rerun.output()).isZero();
    assertThat(rerun.output()).contains("aborting the uploads of run");
    assertThat(HdfsIT.checksum(out)).isEqualTo(want);
    assertThat(names("kill/out")).as("no upload records left").noneMatch(n -> n.startsWith("__magic"));
    assertThat(names("kill")).as("nothing of the killed run left beside the output")
        .noneMatch(n -> n.contains("volpool-staging") || n.contains("volpool-commit"));
    java.util.Set<String> left = pendingUploads();
    assertThat(left).as("every upload the killed run recorded was aborted").doesNotContainAnyElementsOf(recorded);
    // a file a task was still writing has no record: only ListMultipartUploads finds it, which s3proxy lacks
    // (on S3 the rerun lists and aborts it); the rerun says so
    assertThat(left).as("uploads left: unrecorded ones of the killed run").isSubsetOf(pending);
    if (!left.isEmpty()) {
      assertThat(rerun.output()).contains("the store cannot list multipart uploads");
    }
  }

  /**
   * Resume and append on S3 (the magic committer): a run killed once half its tasks committed is resumed
   * from their uploads (its output equals a clean run's, and no upload is left pending), then a run in
   * append mode adds a day of new files.
   */
  @Test
  void aKilledRunOnS3IsResumedFromItsCommittedUploadsAndALaterRunAppendsNewFiles(@TempDir Path tmp) throws Exception {
    Path local = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), local.resolve("day=1").toString(), 1024, 8, 0);
    SampleData.write(SparkTests.spark(), local.resolve("day=2").toString(), 256, 2, 1024);
    put(local.resolve("day=1"), "res/in/day=1");
    String out = "s3a://" + BUCKET + "/res/out";
    Map<String, String> conf = withPaths("s3a://" + BUCKET + "/res/in", "parquet", out);
    conf.put("spark.volpool.fused.weights", Path.of("../conf/models/fused_seed.safetensors").toAbsolutePath().toString());
    conf.put("spark.volpool.device", "cpu");
    conf.put("spark.sql.files.maxPartitionBytes", String.valueOf(12L << 20));
    s3a.forEach((k, v) -> conf.put("spark.hadoop." + k, v));
    Map<String, String> clean = new java.util.HashMap<>(conf);
    clean.put("spark.volpool.output", "s3a://" + BUCKET + "/res/clean");
    ChildJvm.Child c = ChildJvm.start("2g", "local[2]", clean, tmp.resolve("clean.log"));
    assertThat(c.waitFor(300)).as(c.output()).isZero();
    Map<String, String> want = HdfsIT.checksum("s3a://" + BUCKET + "/res/clean");
    int tasks = HdfsIT.summary(fs, "s3a://" + BUCKET + "/res/clean").get("files_out").asInt();
    java.util.Set<String> pendingBefore = pendingUploads();

    conf.put("spark.volpool.output.mode", "resume");
    ChildJvm.Child run = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("kill.log"));
    long committed = run.awaitCommits(() -> (int) committedTasks("res/out"), tasks / 2);
    run.process().destroyForcibly().waitFor();
    ChildJvm.Child resumed = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("resumed.log"));
    assertThat(resumed.waitFor(300)).as(resumed.output()).isZero();
    JsonNode r = HdfsIT.summary(fs, out).get("resumed");
    assertThat(r).as("the resumed run's summary").isNotNull();
    assertThat(r.get("tasks_kept").asLong()).as("kept: the uploads committed at the kill").isGreaterThanOrEqualTo(committed);
    assertThat(HdfsIT.checksum(out)).as("resumed on S3, volume for volume").isEqualTo(want);
    assertThat(names("res/out")).as("no upload records left").noneMatch(n -> n.startsWith("__magic"));
    assertThat(names("res")).noneMatch(n -> n.contains("volpool-staging") || n.contains("volpool-commit"));

    put(local.resolve("day=2"), "res/in/day=2");
    conf.put("spark.volpool.output.mode", "append");
    ChildJvm.Child appended = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("append.log"));
    assertThat(appended.waitFor(300)).as(appended.output()).isZero();
    assertThat(HdfsIT.summary(fs, out).get("appended").get("input_files_new").asInt()).isEqualTo(2);
    assertThat(HdfsIT.checksum(out)).as("appended on S3").hasSize(1280);
    assertThat(SparkTests.spark().read().parquet(out).count()).as("each volume once").isEqualTo(1280);
    assertThat(names("res/out")).noneMatch(n -> n.startsWith("__magic"));
    // every upload this test's runs started was completed or aborted, but those no record names (s3proxy cannot list)
    java.util.Set<String> left = pendingUploads();
    left.removeAll(pendingBefore);
    assertThat(left.size()).as("uploads left pending").isLessThanOrEqualTo(2);
  }
}
