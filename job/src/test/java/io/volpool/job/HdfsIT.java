package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job on a real HDFS (a MiniDFSCluster of one namenode and one datanode in this JVM): Parquet and
 * .npy input from hdfs://, output to hdfs://, and on those paths the overwrite guard, the committed
 * counts, the status file, the removal of a dead run's staging, a killed run and its rerun, and tasks
 * placed on the host that holds their blocks. Runs in mvn verify (failsafe).
 */
class HdfsIT {
  static MiniDFSCluster dfs;
  static FileSystem fs;
  static String root;

  @BeforeAll
  static void startHdfs(@TempDir Path tmp) throws Exception {
    Configuration c = new Configuration();
    c.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, tmp.resolve("dfs").toString());
    // the datanode names itself as Spark names this host, so a task reading its blocks can be NODE_LOCAL
    // (local mode's executor takes the canonical name of this host's address, not spark.driver.host)
    SparkTests.spark();
    String sparkHost = org.apache.spark.util.Utils.localCanonicalHostName();
    c.set("dfs.datanode.hostname", sparkHost);
    dfs = new MiniDFSCluster.Builder(c).numDataNodes(1).checkDataNodeHostConfig(true).build();
    dfs.waitActive();
    fs = dfs.getFileSystem();
    root = fs.getUri() + "/volpool";
  }

  @AfterAll
  static void stopHdfs() throws Exception {
    if (dfs != null) {
      dfs.shutdown();
    }
  }

  static org.apache.hadoop.fs.Path hdfs(String rel) {
    return new org.apache.hadoop.fs.Path(root + "/" + rel);
  }

  static void put(Path local, String rel) throws Exception {
    fs.copyFromLocalFile(new org.apache.hadoop.fs.Path(local.toUri()), hdfs(rel));
  }

  static String read(org.apache.hadoop.fs.Path p) throws Exception {
    try (InputStream in = fs.open(p)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** id -> shape and digest of data, for a Parquet output anywhere Spark reads. */
  static Map<String, String> checksum(String path) throws Exception {
    Map<String, String> m = new TreeMap<>();
    for (Row r : SparkTests.spark().read().parquet(path).collectAsList()) {
      m.put(r.getString(0), r.getList(1) + ":" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
          .digest((byte[]) r.get(3))));
    }
    return m;
  }

  @Test
  void parquetAndNpyFromHdfsToHdfsEqualLocalRuns(@TempDir Path tmp) throws Exception {
    put(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), "in-pq/date=2026-12-01/a.parquet");
    String out = root + "/out-pq";
    List<String> localities = new CopyOnWriteArrayList<>();
    SparkListener l = new SparkListener() {
      @Override
      public void onTaskEnd(SparkListenerTaskEnd e) {
        localities.add(e.taskInfo().taskLocality().toString());
      }
    };
    SparkTests.spark().sparkContext().addSparkListener(l);
    SparkTests.Result r;
    try {
      r = SparkTests.run(withPaths(root + "/in-pq", "parquet", out));
    } finally {
      SparkTests.spark().sparkContext().removeSparkListener(l);
    }
    assertThat(r.code()).as(r.err()).isZero();
    SparkTests.Result local = SparkTests.run(JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir()
        .resolve("volumes_binary.parquet"), "parquet", tmp.resolve("local")));
    assertThat(local.code()).as(local.err()).isZero();
    assertThat(checksum(out)).isEqualTo(checksum(tmp.resolve("local").toString())).hasSize(2);
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(out + "/date=2026-12-01"))).as("the input's folder is kept").isTrue();
    JsonNode summary = new ObjectMapper().readTree(read(new org.apache.hadoop.fs.Path(out + "/" + VolpoolJob.SUMMARY_FILE)));
    assertThat(summary.get("volumes_out").asLong()).isEqualTo(2);
    assertThat(summary.get("output").asText()).startsWith("hdfs://");
    JsonNode status = new ObjectMapper().readTree(read(hdfs(".out-pq.volpool-status.json")));
    assertThat(status.get("status").asText()).isEqualTo("succeeded");
    assertThat(status.get("exit_code").asInt()).isZero();
    assertThat(names("")).as("no staging, owner file or lock left beside the output")
        .noneMatch(n -> n.contains("volpool-staging") || n.contains("volpool-commit"));
    assertThat(localities).as("the task ran where its block is").contains("NODE_LOCAL");

    put(JobEndToEndTest.SEED.dir().resolve("input.npy"), "in-npy/sub/v.npy");
    r = SparkTests.run(withPaths(root + "/in-npy", "npy", root + "/out-npy"));
    assertThat(r.code()).as(r.err()).isZero();
    SparkTests.Result localNpy = SparkTests.run(JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir().resolve("input.npy"),
        "npy", tmp.resolve("local-npy")));
    assertThat(localNpy.code()).as(localNpy.err()).isZero();
    try (InputStream in = fs.open(hdfs("out-npy/sub/v.npy"))) {
      assertThat(in.readAllBytes()).isEqualTo(java.nio.file.Files.readAllBytes(tmp.resolve("local-npy/input.npy")));
    }
  }

  /**
   * A volume stored across uncompressed rows on HDFS is read by position (HDFS's pread, by channel on
   * several threads, no row held: the reader keeps one row aside, not two) and its output is bit for bit
   * the run from the same file on the local disk; its rows as a user writes them (no dictionary, as
   * docs/large-volumes.md's pyarrow code), through the job as users run it (avgpool3d, in slabs).
   */
  @Test
  void volumesAcrossRowsOnHdfsAreReadByPositionAndEqualALocalRun(@TempDir Path tmp) throws Exception {
    io.volpool.op.VolumeShape s = new io.volpool.op.VolumeShape(3, 40, 32, 64);
    List<VolumesAcrossRowsTest.Part> parts = VolumesAcrossRowsTest.cut("v", 11, s, 7, 8, 20, 33);
    Path file = tmp.resolve("in/rows.parquet");
    java.nio.file.Files.createDirectories(file.getParent());
    try (org.apache.parquet.hadoop.ParquetWriter<org.apache.parquet.example.data.Group> w =
        org.apache.parquet.hadoop.example.ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(file.toUri()))
            .withConf(new Configuration()).withType(VolumesAcrossRowsTest.SCHEMA).withDictionaryEncoding(false)
            .build()) {
      for (VolumesAcrossRowsTest.Part p : parts) {
        w.write(VolumesAcrossRowsTest.row(p));
      }
    }
    put(file, "in-rows/rows.parquet");
    Map<String, String> conf = SparkTests.conf("pipeline", "avgpool3d");
    conf.put("spark.volpool.input", root + "/in-rows");
    conf.put("spark.volpool.output", tmp.resolve("out-hdfs").toString());
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("rows          5 in, ");
    conf.put("spark.volpool.input", tmp.resolve("in").toString());
    conf.put("spark.volpool.output", tmp.resolve("out-local").toString());
    SparkTests.Result local = SparkTests.run(conf);
    assertThat(local.code()).as(local.err()).isZero();
    io.volpool.op.VolumeShape o = io.volpool.op.Pipeline.of(new io.volpool.ops.avgpool3d.AvgPool3dSpec(3, 2, 1, false, true))
        .outputShape(s);
    float[] got = VolumesAcrossRowsTest.readOutput(tmp.resolve("out-hdfs"), Map.of("v", o)).get("v");
    VolumesAcrossRowsTest.assertBitIdentical(got, VolumesAcrossRowsTest.readOutput(tmp.resolve("out-local"),
        Map.of("v", o)).get("v"), "from HDFS against from the local disk");

    // the reader itself on the HDFS file: positioned (one row aside), every plane bit for bit, by channel on two threads
    long len = fs.getFileStatus(hdfs("in-rows/rows.parquet")).getLen();
    io.volpool.io.parquet.ParquetSplit split = new io.volpool.io.parquet.ParquetSplit(root + "/in-rows/rows.parquet", "",
        0, len);
    List<io.volpool.io.PlaneVolume.Row> rows = new ArrayList<>();
    for (int i = 0; i < parts.size(); i++) {
      rows.add(new io.volpool.io.PlaneVolume.Row(split, i, parts.get(i).d0(), parts.get(i).d1()));
    }
    io.volpool.io.PlaneVolume v = new io.volpool.io.PlaneVolume("v", s, rows);
    io.volpool.memory.MemoryBudget budget = new io.volpool.memory.MemoryBudget(1L << 30);
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor();
    try (io.volpool.io.parquet.PlaneRowsInput in = new io.volpool.io.parquet.PlaneRowsInput(
        io.volpool.io.parquet.TensorLayout.detect(VolumesAcrossRowsTest.SCHEMA, null, null), fs.getConf(), budget,
        new io.volpool.backend.PhaseTimes())) {
      assertThat(in.heldBytes(v)).as("one row aside (the largest, 13 planes), not two: read by position")
          .isEqualTo(13L * s.c() * s.h() * s.w() * Float.BYTES);
      in.first(v);
      try (io.volpool.backend.PlaneSource src = in.open(v)) {
        assertThat(src.concurrentChannels()).isTrue();
        int hw = s.h() * s.w();
        for (int[] win : new int[][] {{0, 9}, {9, 21}, {25, 40}}) {
          int n = (win[1] - win[0]) * hw;
          java.nio.ByteBuffer dst = java.nio.ByteBuffer.allocateDirect(s.c() * n * Float.BYTES)
              .order(java.nio.ByteOrder.LITTLE_ENDIAN);
          java.util.concurrent.Future<?> other = pool.submit(() -> src.readChannels(1, 3, win[0], win[1], dst, 0, n));
          src.readChannels(0, 1, win[0], win[1], dst, 0, n);
          other.get();
          float[] got2 = new float[s.c() * n];
          dst.asFloatBuffer().get(got2);
          VolumesAcrossRowsTest.assertBitIdentical(got2, VolumesAcrossRowsTest.planes(11, s, win[0], win[1]),
              "planes " + win[0] + ".." + win[1] + " from HDFS");
        }
        in.finish(src);
      }
      assertThat(in.unitsRead()).isEqualTo(5);
      assertThat(budget.peak()).as("no row read into memory").isZero();
    } finally {
      pool.shutdownNow();
    }
  }

  static Map<String, String> withPaths(String in, String format, String out) {
    Map<String, String> conf = JobEndToEndTest.seedConf(Path.of("x"), format, Path.of("y"));
    conf.put("spark.volpool.input", in);
    conf.put("spark.volpool.output", out);
    return conf;
  }

  static List<String> names(String rel) throws Exception {
    List<String> out = new ArrayList<>();
    for (FileStatus s : fs.listStatus(rel.isEmpty() ? new org.apache.hadoop.fs.Path(root) : hdfs(rel))) {
      out.add(s.getPath().getName());
    }
    return out;
  }

  @Test
  void theOverwriteGuardAndDeadRunsStagingOnHdfs() throws Exception {
    put(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), "guard/in/a.parquet");
    String in = root + "/guard/in";
    SparkTests.Result r = SparkTests.run(withPaths(in, "parquet", in + "/nested"));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("lies inside");
    // a dead run's staging and owner file beside the output: removed by the next run, which succeeds
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    org.apache.hadoop.fs.Path staging = hdfs("guard/.out.volpool-staging-dead");
    fs.mkdirs(new org.apache.hadoop.fs.Path(staging, "_temporary/0"));
    try (var os = fs.create(hdfs("guard/.out.volpool-staging-dead.owner"))) {
      os.write(("host=" + InetAddress.getLocalHost().getHostName() + "\npid=" + gone.pid()
          + "\nprocessStart=2026-01-01T00:00:00Z\n").getBytes(StandardCharsets.UTF_8));
    }
    r = SparkTests.run(withPaths(in, "parquet", root + "/guard/out"));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(names("guard")).containsExactlyInAnyOrder("in", "out", ".out.volpool-status.json");
    // the output exists: errorifexists refuses, overwrite replaces
    r = SparkTests.run(withPaths(in, "parquet", root + "/guard/out"));
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("already exists");
    Map<String, String> over = withPaths(in, "parquet", root + "/guard/out");
    over.put("spark.volpool.output.mode", "overwrite");
    r = SparkTests.run(over);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(checksum(root + "/guard/out")).hasSize(2);
    assertThat(names("guard")).containsExactlyInAnyOrder("in", "out", ".out.volpool-status.json");
  }

  /** Tasks committed into the staging folder of {@code rel} on HDFS (FileOutputCommitter: _temporary/0/task_*). */
  static int committedTasks(String parentRel, String name) throws Exception {
    int n = 0;
    for (FileStatus s : fs.listStatus(hdfs(parentRel))) {
      if (s.getPath().getName().startsWith("." + name + ".volpool-staging-") && s.isDirectory()) {
        org.apache.hadoop.fs.Path attempts = new org.apache.hadoop.fs.Path(s.getPath(), "_temporary/0");
        try {
          for (FileStatus t : fs.listStatus(attempts)) {
            n += t.getPath().getName().startsWith("task_") ? 1 : 0;
          }
        } catch (java.io.FileNotFoundException e) {
          // not made yet, or the run committed and removed it while this looked
        }
      }
    }
    return n;
  }

  @Test
  void aKilledRunOnHdfsLeavesNoOutputAndItsRerunEqualsACleanRun(@TempDir Path tmp) throws Exception {
    Path local = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), local.toString(), 2048, 8);
    fs.mkdirs(hdfs("kill"));
    fs.copyFromLocalFile(new org.apache.hadoop.fs.Path(local.toUri()), hdfs("kill"));
    Map<String, String> conf = withPaths(root + "/kill/in", "parquet", root + "/kill/out");
    conf.put("spark.volpool.fused.weights", Path.of("../conf/models/fused_seed.safetensors").toAbsolutePath().toString());
    conf.put("spark.volpool.output.mode", "overwrite");
    conf.put("spark.volpool.device", "cpu");
    ChildJvm.Child clean = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("clean.log"));
    assertThat(clean.waitFor(300)).as(clean.output()).isZero();
    Map<String, String> want = checksum(root + "/kill/out");
    assertThat(want).hasSize(2048);
    fs.delete(hdfs("kill/out"), true);
    ChildJvm.Child run = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("kill.log"));
    long started = System.nanoTime();
    while (committedTasks("kill", "out") == 0) {
      assertThat(run.process().isAlive()).as("the run ended before any task committed; " + run.output()).isTrue();
      assertThat(System.nanoTime() - started).as("no task committed within 300 s").isLessThan(300_000_000_000L);
      Thread.sleep(20);
    }
    assertThat(run.process().isAlive()).isTrue();
    run.process().destroyForcibly().waitFor();
    assertThat(fs.exists(hdfs("kill/out"))).as("no output after a kill mid-run").isFalse();
    assertThat(names("kill")).as("the killed run's staging is still there").anyMatch(n -> n.contains("volpool-staging"));
    ChildJvm.Child rerun = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("rerun.log"));
    assertThat(rerun.waitFor(300)).as(rerun.output()).isZero();
    assertThat(checksum(root + "/kill/out")).isEqualTo(want);
    assertThat(names("kill")).as("nothing of the killed run left").noneMatch(n -> n.contains("volpool-staging")
        || n.contains("volpool-commit"));
  }

  /**
   * .npy volumes larger than a task, written as .npy on HDFS: each range task writes its planes as parts (one
   * per channel) in its work folder, committed with it; the driver joins each file's parts in order with
   * HDFS's concat. Every file equals the local run with each file in one task, byte for byte.
   */
  @Test
  void npyRangesOnHdfsAreJoinedByConcatIntoTheFilesOfOneTask(@TempDir Path tmp) throws Exception {
    io.volpool.op.VolumeShape s = new io.volpool.op.VolumeShape(2, 512, 32, 32);
    NpyRangesTest.writeNpy(tmp.resolve("in/big.npy"), "<i2", new long[] {s.c(), s.d(), s.h(), s.w()},
        NpyRangesTest.values("<i2", s.numel(), 5));
    NpyRangesTest.writeNpy(tmp.resolve("in/sub/batch.npy"), "<f4", new long[] {2, s.c(), s.d(), s.h(), s.w()},
        NpyRangesTest.values("<f4", 2 * s.numel(), 6));
    Path whole = tmp.resolve("whole");
    SparkTests.Result one = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", whole.toString(), "output.format", "npy", "pipeline", "avgpool3d", "device", "cpu",
        "input.spreadVolumes", "false"));
    assertThat(one.code()).as(one.err()).isZero();
    fs.mkdirs(hdfs("concat"));
    fs.copyFromLocalFile(new org.apache.hadoop.fs.Path(tmp.resolve("in").toUri()), hdfs("concat"));
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", SparkTests.conf("input", root + "/concat/in", "input.format",
        "npy", "output", root + "/concat/out", "output.format", "npy", "pipeline", "avgpool3d", "device", "cpu",
        "spark.sql.files.maxPartitionBytes", "300000", "spark.sql.files.openCostInBytes", "0"), tmp.resolve("child.log"));
    assertThat(c.waitFor(300)).as(c.output()).isZero();
    assertThat(NpyOutputInPlaceTest.rangeTasks(c.output())).isGreaterThan(10);
    assertThat(c.output()).contains("volumes       3 in, 3 out")
        .contains("volpool: 2 .npy file(s) joined from their range tasks' parts (HDFS concat) in ");
    Path got = tmp.resolve("got");
    fs.copyToLocalFile(hdfs("concat/out"), new org.apache.hadoop.fs.Path(got.toUri()));
    NpyOutputInPlaceTest.assertSameFiles(whole, got, "big.npy", "sub/batch.npy");
    assertThat(names("concat/out")).as("no parts or markers left").doesNotContain(
        io.volpool.io.npy.NpyPlanesInPlace.PARTS, io.volpool.io.npy.NpyPlanesInPlace.MARKERS);
    // killed once half the range tasks committed, resumed: the committed tasks' parts are kept and joined with the rest
    int tasks = NpyOutputInPlaceTest.rangeTasks(c.output());
    Map<String, String> conf = SparkTests.conf("input", root + "/concat/in", "input.format", "npy", "output",
        root + "/concat/resumed", "output.format", "npy", "output.mode", "resume", "pipeline", "avgpool3d", "device",
        "cpu", "spark.sql.files.maxPartitionBytes", "300000", "spark.sql.files.openCostInBytes", "0");
    ChildJvm.Child run = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("kill.log"));
    run.awaitCommits(() -> committedTasks("concat", "resumed"), tasks / 2);
    run.process().destroyForcibly().waitFor();
    ChildJvm.Child r = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("resumed.log"));
    assertThat(r.waitFor(300)).as(r.output()).isZero();
    com.fasterxml.jackson.databind.JsonNode resumed = summary(fs, root + "/concat/resumed").get("resumed");
    assertThat(resumed).as(r.output()).isNotNull();
    assertThat(resumed.get("tasks_kept").asLong()).as("tasks kept").isGreaterThanOrEqualTo(tasks / 2);
    Path again = tmp.resolve("again");
    fs.copyToLocalFile(hdfs("concat/resumed"), new org.apache.hadoop.fs.Path(again.toUri()));
    NpyOutputInPlaceTest.assertSameFiles(whole, again, "big.npy", "sub/batch.npy");
  }

  /** The summary of the output at {@code path}. */
  static com.fasterxml.jackson.databind.JsonNode summary(org.apache.hadoop.fs.FileSystem on, String path) throws Exception {
    try (java.io.InputStream in = on.open(new org.apache.hadoop.fs.Path(path, VolpoolJob.SUMMARY_FILE))) {
      return new com.fasterxml.jackson.databind.ObjectMapper().readTree(in);
    }
  }

  /**
   * Resume and append on HDFS: a run killed once half its tasks committed is resumed from them (its
   * output equals a clean run's), then a run in append mode adds a day of new files (the output equals a
   * clean run over all of them, each volume once).
   */
  @Test
  void aKilledRunOnHdfsIsResumedFromItsCommittedTasksAndALaterRunAppendsNewFiles(@TempDir Path tmp) throws Exception {
    Path local = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), local.resolve("day=1").toString(), 1024, 8, 0);
    SampleData.write(SparkTests.spark(), local.resolve("day=2").toString(), 256, 2, 1024);
    fs.mkdirs(hdfs("res/in"));
    fs.copyFromLocalFile(new org.apache.hadoop.fs.Path(local.resolve("day=1").toUri()), hdfs("res/in"));
    Map<String, String> conf = withPaths(root + "/res/in", "parquet", root + "/res/out");
    conf.put("spark.volpool.fused.weights", Path.of("../conf/models/fused_seed.safetensors").toAbsolutePath().toString());
    conf.put("spark.volpool.device", "cpu");
    conf.put("spark.sql.files.maxPartitionBytes", String.valueOf(12L << 20));
    Map<String, String> clean = new java.util.HashMap<>(conf);
    clean.put("spark.volpool.output", root + "/res/clean");
    ChildJvm.Child c = ChildJvm.start("2g", "local[2]", clean, tmp.resolve("clean.log"));
    assertThat(c.waitFor(300)).as(c.output()).isZero();
    Map<String, String> want = checksum(root + "/res/clean");
    int tasks = summary(fs, root + "/res/clean").get("files_out").asInt();

    conf.put("spark.volpool.output.mode", "resume");
    ChildJvm.Child run = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("kill.log"));
    int committed = run.awaitCommits(() -> committedTasks("res", "out"), tasks / 2);
    run.process().destroyForcibly().waitFor();
    ChildJvm.Child resumed = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("resumed.log"));
    assertThat(resumed.waitFor(300)).as(resumed.output()).isZero();
    com.fasterxml.jackson.databind.JsonNode r = summary(fs, root + "/res/out").get("resumed");
    assertThat(r).as("the resumed run's summary").isNotNull();
    assertThat(r.get("tasks_kept").asLong()).as("kept: what had committed at the kill").isGreaterThanOrEqualTo(committed);
    assertThat(checksum(root + "/res/out")).as("resumed on HDFS, volume for volume").isEqualTo(want);
    assertThat(names("res")).noneMatch(n -> n.contains("volpool-staging") || n.contains("volpool-commit"));

    // a new day of files: an appending run adds them and only them
    fs.copyFromLocalFile(new org.apache.hadoop.fs.Path(local.resolve("day=2").toUri()), hdfs("res/in"));
    conf.put("spark.volpool.output.mode", "append");
    ChildJvm.Child appended = ChildJvm.start("2g", "local[2]", conf, tmp.resolve("append.log"));
    assertThat(appended.waitFor(300)).as(appended.output()).isZero();
    assertThat(summary(fs, root + "/res/out").get("appended").get("input_files_new").asInt()).isEqualTo(2);
    clean.put("spark.volpool.output", root + "/res/clean-all");
    ChildJvm.Child all = ChildJvm.start("2g", "local[2]", clean, tmp.resolve("clean-all.log"));
    assertThat(all.waitFor(300)).as(all.output()).isZero();
    assertThat(checksum(root + "/res/out")).as("appended on HDFS").isEqualTo(checksum(root + "/res/clean-all"))
        .hasSize(1280);
    assertThat(SparkTests.spark().read().parquet(root + "/res/out").count()).as("each volume once").isEqualTo(1280);
    assertThat(names("res")).noneMatch(n -> n.contains("volpool-staging") || n.contains("volpool-commit"));
  }
}
