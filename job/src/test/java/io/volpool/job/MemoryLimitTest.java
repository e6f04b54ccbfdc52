package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.cpu.CpuBackend;
import io.volpool.format.Npy;
import io.volpool.format.NpyArray;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.testing.Tolerance;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Four reference avgpool3d volumes [32,128,128,256] (512 MiB each, 2 GiB in all) go through .npy ->
 * Parquet -> avgpool3d -> Parquet in a JVM with a 3 GiB heap and two task slots: the memory budget
 * makes tasks wait instead of running the heap out. A budget smaller than one volume fails at once,
 * naming the volume, its size and the setting to raise.
 */
class MemoryLimitTest {
  static final VolumeShape BIG = new VolumeShape(32, 128, 128, 256);
  static final int VOLUMES = 4;

  /** Volume {@code i}: a cheap deterministic pattern, written in 4 MiB chunks (no 512 MiB array). */
  static void writeNpy(Path p, int i) throws IOException {
    Files.createDirectories(p.getParent());
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(Npy.header(new long[] {32, 128, 128, 256})));
      ByteBuffer chunk = ByteBuffer.allocate(4 << 20).order(ByteOrder.LITTLE_ENDIAN);
      long n = BIG.numel();
      for (long k = 0; k < n; ) {
        chunk.clear();
        while (chunk.hasRemaining() && k < n) {
          chunk.putFloat(value(i, k++));
        }
        chunk.flip();
        while (chunk.hasRemaining()) {
          ch.write(chunk);
        }
      }
    }
  }

  static float value(int i, long k) {
    return (float) (((k * 2654435761L + i * 97L) & 1023) / 512.0 - 1.0);
  }

  @Test
  void fourHalfGibibyteVolumesInAThreeGibibyteHeap(@TempDir Path tmp) throws Exception {
    for (int i = 0; i < VOLUMES; i++) {
      writeNpy(tmp.resolve("npy/v" + i + ".npy"), i);
    }
    Path rows = tmp.resolve("rows");
    ChildJvm.Child toParquet = ChildJvm.start("3g", "local[2]", Map.of("spark.volpool.input", tmp.resolve("npy").toString(),
        "spark.volpool.input.format", "npy", "spark.volpool.output.format", "parquet", "spark.volpool.output",
        rows.toString(), "spark.volpool.pipeline", "identity", "spark.volpool.device", "cpu"), tmp.resolve("a.log"));
    assertThat(toParquet.waitFor(600)).as(toParquet.output()).isZero();
    Path out = tmp.resolve("out");
    ChildJvm.Child pool = ChildJvm.start("3g", "local[2]", Map.of("spark.volpool.input", rows.toString(),
        "spark.volpool.output", out.toString(), "spark.volpool.pipeline", "avgpool3d", "spark.volpool.device", "cpu",
        "spark.volpool.avgpool3d.kernelSize", "3", "spark.volpool.avgpool3d.stride", "2", "spark.volpool.avgpool3d.padding", "1"),
        tmp.resolve("b.log"));
    assertThat(pool.waitFor(600)).as(pool.output()).isZero();
    assertThat(pool.output()).contains("volumes       4 in, 4 out").contains("2048.0 MiB in, 256.0 MiB out");
    List<Row> got = SparkTests.spark().read().parquet(out.toString()).orderBy("id").collectAsList();
    assertThat(got).extracting(r -> r.getString(0)).containsExactly("v0.npy", "v1.npy", "v2.npy", "v3.npy");
    try (CpuBackend cpu = CpuBackend.fast(0)) {
      for (int i = 0; i < VOLUMES; i++) {
        float[] x = new float[(int) BIG.numel()];
        for (int k = 0; k < x.length; k++) {
          x[k] = value(i, k);
        }
        float[] ref = cpu.run(Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true)), BIG, x, 1);
        x = null;
        byte[] data = (byte[]) got.get(i).get(3);
        float[] y = new float[data.length / 4];
        ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(y);
        Tolerance.assertClose(y, ref, "volume v" + i + ".npy");
      }
    }
  }

  @Test
  void aBudgetSmallerThanOneVolumeRunsItInSlabsAndTooSmallABudgetNamesTheVolume(@TempDir Path tmp) throws Exception {
    writeNpy(tmp.resolve("npy/big.npy"), 0);
    // 128 MiB: one batch of the 512 MiB volume would need 640 MiB; slabs need a few MiB
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", tmp.resolve("npy").toString(), "input.format", "npy",
        "output", tmp.resolve("out").toString(), "pipeline", "avgpool3d", "memory.budget", "128m", "device", "cpu"));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       1 in, 1 out").contains("1 slabbed");
    NpyArray got = SparkTests.readNpy(tmp.resolve("out/big.npy"));
    float[] x = new float[(int) BIG.numel()];
    for (int k = 0; k < x.length; k++) {
      x[k] = value(0, k);
    }
    float[] ref;
    try (CpuBackend cpu = CpuBackend.fast(2)) {
      ref = cpu.run(Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true)), BIG, x, 1);
    }
    assertThat(got.shape()).containsExactly(32, 64, 64, 128);
    assertThat(got.toFloatArray()).as("slabbed .npy output = the whole-volume result, bit for bit").isEqualTo(ref);

    // 16 MiB: even slabs of one output plane (three input planes of every channel) need more than half
    SparkTests.Result tiny = SparkTests.run(SparkTests.conf("input", tmp.resolve("npy").toString(), "input.format", "npy",
        "output", tmp.resolve("out2").toString(), "pipeline", "avgpool3d", "memory.budget", "16m", "device", "cpu"));
    assertThat(tiny.code()).as(tiny.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(tiny.err()).contains("volume file:" + tmp.resolve("npy/big.npy")).contains("[32, 128, 128, 256]")
        .contains("one output plane").contains("raise spark.volpool.memory.budget");
    assertThat(tmp.resolve("out2")).doesNotExist();
  }
}
