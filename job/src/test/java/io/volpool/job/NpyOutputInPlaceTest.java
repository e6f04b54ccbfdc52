package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.io.npy.NpyPlanesInPlace.Marker;
import io.volpool.job.commit.CommittedOutput;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * .npy output of volumes spread over tasks: each range task writes its output planes by position into the
 * volume's one staged file, marks them once they are durable, and the commit counts every volume's planes
 * once. Against the same job with each file in one task (written by the whole-file writer, which shares no
 * offset arithmetic with the ranges'), byte for byte; a killed run resumed; a missing or doubled range.
 */
class NpyOutputInPlaceTest {
  /** Each output .npy of {@code b} equals {@code a}'s byte for byte, and no marker is left. */
  static void assertSameFiles(Path a, Path b, String... names) throws Exception {
    for (String n : names) {
      assertThat(b.resolve(n)).exists();
      assertThat(Files.mismatch(a.resolve(n), b.resolve(n))).as(n + ": first differing byte").isEqualTo(-1L);
    }
    assertThat(b.resolve(io.volpool.io.npy.NpyPlanesInPlace.MARKERS)).as("markers removed at the commit").doesNotExist();
  }

  /** The number of range tasks the job's log line says. */
  static int rangeTasks(String log) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("ranges of output planes in ([0-9]+) separate tasks")
        .matcher(log);
    assertThat(m.find()).as(log).isTrue();
    return Integer.parseInt(m.group(1));
  }

  @Test
  void npyVolumesSpreadOverTasksAreWrittenInPlaceAsTheirOneTaskFilesByteForByte(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 512, 32, 32);
    NpyRangesTest.writeNpy(tmp.resolve("in/big.npy"), "<i2", new long[] {s.c(), s.d(), s.h(), s.w()},
        NpyRangesTest.values("<i2", s.numel(), 5));
    // a batch of two volumes: the second one's ranges land after the first volume's bytes
    NpyRangesTest.writeNpy(tmp.resolve("in/sub/batch.npy"), "<f4", new long[] {2, s.c(), s.d(), s.h(), s.w()},
        NpyRangesTest.values("<f4", 2 * s.numel(), 6));
    // a name with ':' (Hadoop's checksum layer cannot open it): spread too
    NpyRangesTest.writeNpy(tmp.resolve("in/scan:7.npy"), "|u1", new long[] {s.c(), s.d(), s.h(), s.w()},
        NpyRangesTest.values("|u1", s.numel(), 7));
    Path whole = tmp.resolve("whole");
    SparkTests.Result one = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", whole.toString(), "output.format", "npy", "pipeline", "avgpool3d", "device", SparkTests.device(),
        "input.spreadVolumes", "false"));
    assertThat(one.code()).as(one.err()).isZero();
    assertThat(one.err()).doesNotContain("ranges of output planes");
    Path out = tmp.resolve("ranges");
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", SparkTests.conf("input", tmp.resolve("in").toString(),
        "input.format", "npy", "output", out.toString(), "output.format", "npy", "pipeline", "avgpool3d", "device",
        SparkTests.device(), "spark.sql.files.maxPartitionBytes", "300000", "spark.sql.files.openCostInBytes", "0"),
        tmp.resolve("child.log"));
    assertThat(c.waitFor(180)).as(c.output()).isZero();
    assertThat(rangeTasks(c.output())).as("tasks of ranges").isGreaterThan(10);
    assertThat(c.output()).contains("volumes       4 in, 4 out").contains("scan:7.npy output planes [0, ");
    assertSameFiles(whole, out, "big.npy", "sub/batch.npy", "scan:7.npy");
  }

  /**
   * A volume stored across rows, written as its .npy: spread over tasks, each range in place; its values equal
   * the same job's output across rows (Parquet), which no .npy code writes.
   */
  @Test
  void aVolumeAcrossRowsSpreadOverTasksIsOneNpyEqualToItsRows(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(3, 700, 16, 24);
    VolumesAcrossRowsTest.write(tmp.resolve("in/x.parquet"), VolumesAcrossRowsTest.cut("vol", 21, s, 90, 200, 333, 500,
        610), org.apache.parquet.hadoop.metadata.CompressionCodecName.UNCOMPRESSED);
    Path rows = tmp.resolve("rows");
    // maxpool3d k3 s2 p1: every range reads a plane of its neighbours'
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "output", rows.toString(),
        "pipeline", "maxpool3d", "device", SparkTests.device(), "maxpool3d.kernelSize", "3", "maxpool3d.stride", "2",
        "maxpool3d.padding", "1"));
    assertThat(r.code()).as(r.err()).isZero();
    Path out = tmp.resolve("npy");
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", SparkTests.conf("input", tmp.resolve("in").toString(),
        "output", out.toString(), "output.format", "npy", "pipeline", "maxpool3d", "device", SparkTests.device(),
        "maxpool3d.kernelSize", "3", "maxpool3d.stride", "2", "maxpool3d.padding", "1",
        "spark.sql.files.maxPartitionBytes", "1000000", "spark.sql.files.openCostInBytes", "0"), tmp.resolve("child.log"));
    assertThat(c.waitFor(180)).as(c.output()).isZero();
    assertThat(c.output()).contains("ranges of output planes in separate tasks").contains("volumes       1 in, 1 out");
    VolumeShape o = new VolumeShape(3, 350, 8, 12);
    float[] want = VolumesAcrossRowsTest.readOutput(rows, Map.of("vol", o)).get("vol");
    byte[] file = Files.readAllBytes(out.resolve("vol.npy"));
    int header = file.length - (int) o.bytes();
    assertThat(header).as("header bytes").isBetween(64, 256);
    float[] got = new float[(int) o.numel()];
    ByteBuffer.wrap(file, header, (int) o.bytes()).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(got);
    VolumesAcrossRowsTest.assertBitIdentical(got, want, ".npy written in place by ranges against the rows output");
    assertThat(out.resolve(io.volpool.io.npy.NpyPlanesInPlace.MARKERS)).doesNotExist();
  }

  /**
   * Killed once half its range tasks committed, resumed: the committed ranges' planes, durable in the staged
   * file, are kept; the rest run; the .npy equals a clean run's byte for byte.
   */
  @Test
  void aKilledRunWritingInPlaceIsResumedAndEqualsACleanRun(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 1024, 128, 128);
    NpyRangesTest.writeNpy(tmp.resolve("in/big.npy"), "<i2", new long[] {s.c(), s.d(), s.h(), s.w()},
        NpyRangesTest.values("<i2", s.numel(), 3));
    Map<String, String> conf = SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output.format", "npy", "pipeline", "avgpool3d", "device", "cpu",
        "spark.sql.files.maxPartitionBytes", String.valueOf(4L << 20), "spark.sql.files.openCostInBytes", "0");
    Path clean = tmp.resolve("clean");
    conf.put("spark.volpool.output", clean.toString());
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("clean.log"));
    assertThat(c.waitFor(300)).as(c.output()).isZero();
    int tasks = rangeTasks(c.output());
    assertThat(tasks).as("range tasks of the clean run").isGreaterThanOrEqualTo(8);
    Path out = tmp.resolve("out/pooled");
    conf.put("spark.volpool.output", out.toString());
    conf.put("spark.volpool.output.mode", "resume");
    int committed = ResumeTest.killAfter(tmp, conf, out, tasks / 2, "killed");
    ChildJvm.Child r = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("resumed.log"));
    assertThat(r.waitFor(300)).as(r.output()).isZero();
    var resumed = ResumeTest.summary(out).get("resumed");
    assertThat(resumed).as(r.output()).isNotNull();
    assertThat(resumed.get("tasks_kept").asLong()).isGreaterThanOrEqualTo(committed);
    assertThat(resumed.get("tasks_run").asLong()).isEqualTo(tasks - resumed.get("tasks_kept").asLong());
    assertThat(ResumeTest.summary(out).get("volumes_in").asLong() + resumed.get("volumes_kept").asLong())
        .as("the volume, once").isEqualTo(1);
    assertSameFiles(clean, out, "big.npy");

    // the staged file cut short after the kill (a full disk, a hand): the kept tasks whose planes it no longer
    // reaches run again, rather than publishing zeros for them
    Path cut = tmp.resolve("cut/pooled");
    conf.put("spark.volpool.output", cut.toString());
    ResumeTest.killAfter(tmp, conf, cut, tasks / 2, "killed-cut");
    Path staged;
    try (Stream<Path> st = Files.list(cut.getParent())) {
      staged = st.filter(p -> p.getFileName().toString().startsWith(".pooled.volpool-staging-") && Files.isDirectory(p))
          .findFirst().orElseThrow().resolve(io.volpool.io.npy.NpyPlanesInPlace.FILES).resolve("big.npy");
    }
    try (var ch = java.nio.channels.FileChannel.open(staged, java.nio.file.StandardOpenOption.WRITE)) {
      ch.truncate(Files.size(clean.resolve("big.npy")) / 2);
    }
    ChildJvm.Child again = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("resumed-cut.log"));
    assertThat(again.waitFor(300)).as(again.output()).isZero();
    assertThat(again.output()).contains("runs again");
    assertSameFiles(clean, cut, "big.npy");
  }

  /**
   * The commit's count of planes written in place: every volume of a marked file whole, once; a range
   * missing, doubled, or a volume of a batch never written fails, naming the file, volume and planes.
   */
  @Test
  void theCommitCountsEveryVolumesPlanesWrittenInPlaceOnce(@TempDir Path tmp) throws Exception {
    assertThat(Marker.tiles(List.of(new Marker("a.npy", 0, 0, 64, 100, 1), new Marker("a.npy", 0, 64, 100, 100, 1))))
        .isNull();
    assertThat(Marker.tiles(List.of(new Marker("a.npy", 0, 0, 64, 100, 1), new Marker("a.npy", 0, 70, 100, 100, 1))))
        .isEqualTo("the committed output a.npy lacks output planes [64, 70) of its 100");
    assertThat(Marker.tiles(List.of(new Marker("a.npy", 0, 0, 64, 100, 1), new Marker("a.npy", 0, 0, 100, 100, 1))))
        .isEqualTo("the committed output a.npy holds output planes [0, 64) twice");
    assertThat(Marker.tiles(List.of(new Marker("d/b.npy", 0, 0, 100, 100, 1), new Marker("d/b.npy", 0, 0, 64, 100, 1))))
        .isEqualTo("the committed output d/b.npy holds output planes [0, 64) twice");
    assertThat(Marker.tiles(List.of(new Marker("a.npy", 0, 0, 64, 100, 1)))).isEqualTo(
        "the committed output a.npy lacks output planes [64, 100) of its 100");
    assertThat(Marker.tiles(List.of(new Marker("b.npy", 1, 0, 100, 100, 2))))
        .isEqualTo("the committed output b.npy[0] lacks all its output planes");
    // markers as files, as a committed output holds them: read back and counted, then checked by the job's rule
    Path staged = tmp.resolve("staged");
    NpyRangesTest.writeNpy(staged.resolve("v.npy"), "<f4", new long[] {1, 100, 2, 2}, new byte[100 * 4 * 4]);
    var fs = org.apache.hadoop.fs.FileSystem.getLocal(new Configuration());
    for (Marker m : List.of(new Marker("v.npy", 0, 0, 40, 100, 1), new Marker("v.npy", 0, 64, 100, 100, 1))) {
      try (var os = fs.create(m.path(new org.apache.hadoop.fs.Path(staged.toUri())))) {
        os.write("100 1\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      }
    }
    CommittedOutput c = CommittedOutput.count(new org.apache.hadoop.fs.Path(staged.toUri()), true, false,
        new Configuration());
    assertThat(c.files()).isEqualTo(1);
    assertThat(c.planeProblem()).isEqualTo("the committed output v.npy lacks output planes [40, 64) of its 100");
    var plan = new io.volpool.job.io.InputPlanner.Plan(List.of(), 1, 1600, 1, List.of(), null);
    assertThatThrownBy(() -> CommittedOutput.check(c, plan, new CommittedOutput.TaskCounts(1, 1, 1, 0), true, true,
        false, "/out")).hasMessageContaining("lacks output planes [40, 64) of its 100")
        .hasMessageContaining("Nothing was moved into /out");
    // every plane marked, but the file short of its last bytes (lost writes): the size is the problem, not bad input
    try (var os = fs.create(new Marker("v.npy", 0, 40, 64, 100, 1).path(new org.apache.hadoop.fs.Path(staged.toUri())))) {
      os.write("100 1\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    }
    long full = Files.size(staged.resolve("v.npy"));
    try (var ch = java.nio.channels.FileChannel.open(staged.resolve("v.npy"), java.nio.file.StandardOpenOption.WRITE)) {
      ch.truncate(full - 16);
    }
    assertThat(CommittedOutput.count(new org.apache.hadoop.fs.Path(staged.toUri()), true, false, new Configuration())
        .planeProblem()).isEqualTo("the committed output v.npy holds " + (full - 16) + " bytes where its header says "
            + full);
    // parts (HDFS) whose header part never committed: the join refuses them rather than dropping them
    Path parts = tmp.resolve("parts");
    Files.createDirectories(parts.resolve(io.volpool.io.npy.NpyPlanesInPlace.PARTS + "/w.npy"));
    Files.write(parts.resolve(io.volpool.io.npy.NpyPlanesInPlace.PARTS + "/w.npy/0.0.64"), new byte[16]);
    assertThatThrownBy(() -> io.volpool.io.npy.NpyPlanesInPlace.joinParts(io.volpool.io.Files2.fs(
        new org.apache.hadoop.fs.Path(parts.toUri()), new Configuration()), new org.apache.hadoop.fs.Path(parts.toUri()),
        io.volpool.io.npy.NpyPlanesInPlace.Mode.PARTS, io.volpool.io.npy.PartsJoin::streamed))
        .hasMessageContaining("w.npy have no header part");
  }

  /**
   * A batch of no volumes ({@code np.save} of an empty stack, {@code [0, C, D, H, W]}) is no error: it is read as
   * none, and its output is a batch of none of the pipeline's output shape, as numpy would save the empty result.
   */
  @Test
  void aBatchOfNoVolumesGivesABatchOfNone(@TempDir Path tmp) throws Exception {
    NpyRangesTest.writeNpy(tmp.resolve("in/a.npy"), "<f4", new long[] {2, 1, 8, 8, 8}, NpyRangesTest.values("<f4", 1024, 1));
    NpyRangesTest.writeNpy(tmp.resolve("in/sub/empty.npy"), "<i2", new long[] {0, 1, 8, 8, 8}, new byte[0]);
    Path out = tmp.resolve("out");
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", out.toString(), "output.format", "npy", "pipeline", "avgpool3d", "device", SparkTests.device()));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       2 in, 2 out");
    byte[] b = Files.readAllBytes(out.resolve("sub/empty.npy"));
    io.volpool.format.NpyHeader h = io.volpool.format.NpyHeader.parse(b, b.length, "empty.npy", 1 << 16);
    assertThat(h.shape()).containsExactly(0, 1, 4, 4, 4);
    assertThat(h.descr()).isEqualTo("<f4");
    assertThat(out.resolve("a.npy")).exists();
  }

  /**
   * A .npy volume whose output is more than 2 GiB (one output buffer's most): written in place by ranges, where
   * it used to be refused; the identity pipeline's output holds the input's bytes.
   */
  @Test
  void anNpyOutputLargerThan2GiBIsWrittenInPlace(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(1, 2080, 512, 512); // 2.03 GiB of float32
    Path in = tmp.resolve("in/huge.npy");
    Files.createDirectories(in.getParent());
    // the header the job writes for float32 output: the identity's output file is the input file
    Files.write(in, io.volpool.format.Npy.header(new long[] {s.c(), s.d(), s.h(), s.w()}));
    long header = Files.size(in);
    try (var ch = java.nio.channels.FileChannel.open(in, java.nio.file.StandardOpenOption.WRITE)) {
      ByteBuffer plane = ByteBuffer.allocate(s.h() * s.w() * 4).order(ByteOrder.LITTLE_ENDIAN);
      for (int d = 0; d < s.d(); d++) {
        plane.clear();
        for (int i = 0; i < s.h() * s.w(); i++) {
          plane.putFloat(d * 1e-3f + i);
        }
        plane.flip();
        ch.write(plane, header + (long) d * plane.capacity());
      }
    }
    Path out = tmp.resolve("out");
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", SparkTests.conf("input", tmp.resolve("in").toString(),
        "input.format", "npy", "output", out.toString(), "output.format", "npy", "pipeline", "identity", "device", "cpu"),
        tmp.resolve("child.log"));
    assertThat(c.waitFor(400)).as(c.output()).isZero();
    assertThat(c.output()).contains("ranges of output planes in").contains("volumes       1 in, 1 out");
    assertThat(Files.size(out.resolve("huge.npy"))).isEqualTo(Files.size(in)).isGreaterThan(1L << 31);
    assertThat(Files.mismatch(in, out.resolve("huge.npy"))).as("first differing byte").isEqualTo(-1L);
    try (Stream<Path> st = Files.list(out)) {
      assertThat(st.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith("_") && !n.startsWith(".")))
          .containsExactly("huge.npy");
    }
  }
}
