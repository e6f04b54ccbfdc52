package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.backend.PhaseTimes;
import io.volpool.cpu.CpuBackend;
import io.volpool.exec.BatchRunner;
import io.volpool.exec.EngineSpec;
import io.volpool.exec.SlabVolumes;
import io.volpool.exec.TaskState;
import io.volpool.io.PlaneVolume;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.io.parquet.PlaneRowsInput;
import io.volpool.io.parquet.TensorLayout;
import io.volpool.job.io.ParquetInspector;
import io.volpool.job.io.PlaneRowPlanner;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.maxpool3d.MaxPool3dSpec;
import io.volpool.spark.TaskPlan;
import io.volpool.testing.Golden;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One volume stored across rows spread over several tasks as ranges of its output planes: each
 * range reads only the rows its window needs, runs the whole run's slabs that lie in it and writes
 * its own output rows, and the ranges together give the output of one task bit for bit,
 * for every operator, a pipeline and odd halos; each input row is counted once. Through the job, in
 * a JVM whose task size makes several tasks of one volume; and the commit refuses output whose
 * rows miss or double a range of planes.
 */
class SlabRangesTest {
  static Stream<Arguments> pipelines() {
    return Stream.of(
        Arguments.of("avgpool3d k3 s2 p1", Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true)), new VolumeShape(2, 301, 6, 8)),
        Arguments.of("avgpool3d k5 s3 p2 ceil, no pad count", Pipeline.of(new AvgPool3dSpec(5, 3, 2, true, false)),
            new VolumeShape(1, 400, 7, 9)),
        Arguments.of("maxpool3d k3 s2 p1", Pipeline.of(new MaxPool3dSpec(3, 2, 1, 1, false)), new VolumeShape(2, 290, 6, 6)),
        Arguments.of("maxpool3d k2 s1 p1 dilation 2 ceil", Pipeline.of(new MaxPool3dSpec(2, 1, 1, 2, true)),
            new VolumeShape(1, 200, 5, 6)),
        Arguments.of("identity", Pipeline.of(), new VolumeShape(2, 150, 4, 4)),
        Arguments.of("fused then avgpool3d", Pipeline.of(Golden.get("fused_seed").fused(), new AvgPool3dSpec(3, 2, 1, false,
            true)), new VolumeShape(3, 520, 4, 4)));
  }

  /** Runs {@code volumes} through {@code p} as one task would, returning the whole output volume (float32) and the counts. */
  static final class Ran {
    final float[] out;
    long rowsRead;
    long bytesIn;
    long done;

    Ran(VolumeShape o) {
      out = new float[(int) o.numel()];
    }
  }

  /** Puts the output row {@code f} (planes {@code [d0, d1)} of every channel) where it lies in a whole volume {@code o}. */
  static void place(BatchRunner.Finished f, VolumeShape o, float[] out) {
    int ohw = o.h() * o.w();
    int r0 = f.planes()[0][0];
    int r1 = f.planes()[0][1];
    ByteBuffer b = f.output().duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int at = (int) f.offsets()[0];
    for (int c = 0; c < o.c(); c++) {
      for (int i = 0; i < (r1 - r0) * ohw; i++) {
        out[(c * o.d() + r0) * ohw + i] = b.getFloat(at + 4 * (c * (r1 - r0) * ohw + i));
      }
    }
  }

  static Ran run(Path dir, List<PlaneVolume> volumes, Pipeline p, VolumeShape s, long budgetBytes) {
    Configuration conf = new Configuration();
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(dir.resolve("x.parquet").toUri());
    TensorLayout layout;
    try {
      layout = TensorLayout.detect(ParquetInspector.inspect(file, conf).schema(), null, null);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    VolumeShape o = p.outputShape(s);
    Ran r = new Ran(o);
    MemoryBudget budget = new MemoryBudget(budgetBytes);
    EngineSpec spec = new EngineSpec(p, 0, ParquetBatchWriter.GAP, 4L << 10, true);
    // each entry alone, as its own task would run it
    for (PlaneVolume v : volumes) {
      try (CpuBackend cpu = CpuBackend.fast(1, budget);
          SlabVolumes run = new SlabVolumes(List.of(v), new PlaneRowsInput(layout, conf, budget, new PhaseTimes()), cpu, 0,
              spec, budget, new TaskState(), "test")) {
        for (BatchRunner.Finished f = run.next(); f != null; f = run.next()) {
          place(f, o, r.out);
        }
        r.rowsRead += run.volumesIn();
        r.bytesIn += run.bytesIn();
        r.done += run.slabbedVolumes();
      }
    }
    return r;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("pipelines")
  void rangesOfOneVolumeGiveOneTasksOutputBitForBit(String name, Pipeline p, VolumeShape s, @TempDir Path tmp)
      throws Exception {
    // rows of uneven plane counts, so range windows start and end inside rows
    int d = s.d();
    List<VolumesAcrossRowsTest.Part> parts = VolumesAcrossRowsTest.cut("v", 17, s, d / 23, d / 6, d / 6 + 1, d / 3,
        d / 2 + 3, d / 2 + 4, 2 * d / 3);
    VolumesAcrossRowsTest.write(tmp.resolve("x.parquet"), parts, CompressionCodecName.UNCOMPRESSED);
    TensorLayout layout = TensorLayout.detect(ParquetInspector.inspect(new org.apache.hadoop.fs.Path(
        tmp.resolve("x.parquet").toUri()), new Configuration()).schema(), null, null);
    TaskPlan whole = PlaneRowPlanner.plan(tmp.toString(), layout, new Configuration(), 1L << 40, 0, 1).tasks().get(0);
    PlaneVolume v = whole.volumes().get(0);
    List<PlaneVolume> ranges = PlaneRowPlanner.ranges(v, p, v.bytes() / 3);
    assertThat(ranges).as(name + ": ranges").hasSizeGreaterThanOrEqualTo(2);
    int next = 0;
    for (PlaneVolume r : ranges) {
      assertThat(r.range().outFrom()).as("ranges tile the output planes").isEqualTo(next);
      next = r.range().outTo();
      assertThat(r.rows().size()).as("a range lists only the rows of its window").isLessThan(v.rows().size());
    }
    assertThat(next).isEqualTo(p.outputShape(s).d());
    // a small budget: several slabs per range, of a plane count the range's bounds force down
    Ran one = run(tmp, List.of(v), p, s, 2L << 20);
    Ran split = run(tmp, ranges, p, s, 2L << 20);
    VolumesAcrossRowsTest.assertBitIdentical(split.out, one.out, name + ": ranges against one task");
    assertThat(split.rowsRead).as("each row counted once").isEqualTo(v.rows().size()).isEqualTo(one.rowsRead);
    assertThat(split.bytesIn).as("bytes read, each row once").isEqualTo(one.bytesIn).isEqualTo(s.bytes());
    assertThat(split.done).as("ranges finished").isEqualTo(ranges.size());
  }

  /**
   * Through the job's main in a JVM of its own whose task size (spark.sql.files.maxPartitionBytes) is a
   * fraction of one volume: the volume runs as several range tasks on two cores, and the output equals
   * the one-task run's, bit for bit, with the summary counting one volume and each input row once. On
   * the test device (the GPU's slab runs on the GPU machine).
   */
  @Test
  void aVolumeLargerThanATaskRunsAsRangesInSeveralTasks(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 512, 16, 16); // 2 MiB in 5 rows
    VolumesAcrossRowsTest.write(tmp.resolve("in/x.parquet"), VolumesAcrossRowsTest.cut("big", 3, s, 100, 230, 300, 411),
        CompressionCodecName.UNCOMPRESSED);
    Path whole = tmp.resolve("whole");
    SparkTests.Result one = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "output", whole.toString(),
        "pipeline", "avgpool3d", "device", SparkTests.device(), "input.spreadVolumes", "false"));
    assertThat(one.code()).as(one.err()).isZero();
    assertThat(one.out()).as("spreadVolumes=false: the volume in one task").contains("1 file, 1 slabbed");
    assertThat(one.err()).doesNotContain("ranges of output planes");
    Path out = tmp.resolve("ranges");
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", SparkTests.conf("input", tmp.resolve("in").toString(), "output",
        out.toString(), "pipeline", "avgpool3d", "device", SparkTests.device(), "spark.sql.files.maxPartitionBytes", "300000",
        "spark.sql.files.openCostInBytes", "0"), tmp.resolve("child.log"));
    assertThat(c.waitFor(180)).as(c.output()).isZero();
    assertThat(c.output()).contains("ranges of output planes in separate tasks").contains("volumes       1 in, 1 out")
        .contains("rows          5 in");
    VolumeShape o = new VolumeShape(2, 256, 8, 8);
    Map<String, float[]> a = VolumesAcrossRowsTest.readOutput(whole, Map.of("big", o));
    Map<String, float[]> b = VolumesAcrossRowsTest.readOutput(out, Map.of("big", o));
    VolumesAcrossRowsTest.assertBitIdentical(b.get("big"), a.get("big"), "ranges in tasks against one task");
    JsonNode summary = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(summary.get("bytes_in").asLong()).isEqualTo(s.bytes());
  }
}
