package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.cpu.CpuBackend;
import io.volpool.format.NpyArray;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.testing.Tolerance;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reference avgpool3d volume, [32,128,128,256] float32 (512 MiB), as one .npy file and then as
 * one Parquet row: read, run, written and compared in full with the CPU backend.
 */
class LargeVolumeTest {
  static final VolumeShape BIG = new VolumeShape(32, 128, 128, 256);

  @Test
  void halfGibibyteVolumeThroughNpyAndParquet(@TempDir Path tmp) throws Exception {
    float[] x = new float[(int) BIG.numel()];
    long state = 42;
    for (int i = 0; i < x.length; i++) {
      state = state * 6364136223846793005L + 1442695040888963407L;
      x[i] = (state >>> 40) / (float) (1 << 24);
    }
    SparkTests.writeNpy(tmp.resolve("in/big.npy"), NpyArray.of(new long[] {32, 128, 128, 256}, x));
    // 1) .npy -> Parquet, identity: a 512 MiB file through binaryFile and a 512 MiB Parquet row out
    Path rows = tmp.resolve("rows");
    SparkTests.Result r1 = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", rows.toString(), "output.format", "parquet", "pipeline", "identity"));
    assertThat(r1.code()).as(r1.err()).isZero();
    // 2) Parquet -> Parquet, avgpool3d k3 s2 p1 (the reference configuration)
    Path out = tmp.resolve("out");
    SparkTests.Result r2 = SparkTests.run(SparkTests.conf("input", rows.toString(), "output", out.toString(),
        "pipeline", "avgpool3d"));
    assertThat(r2.code()).as(r2.err()).isZero();
    assertThat(r2.out()).contains("volumes       1 in, 1 out").contains("512.0 MiB in, 64.0 MiB out");
    List<Row> got = SparkTests.spark().read().parquet(out.toString()).collectAsList();
    assertThat(got).hasSize(1);
    assertThat(got.get(0).getString(0)).isEqualTo("big.npy");
    assertThat(got.get(0).getList(1)).containsExactly(32, 64, 64, 128);
    byte[] data = (byte[]) got.get(0).get(3);
    float[] y = new float[data.length / 4];
    ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(y);
    float[] ref;
    try (CpuBackend cpu = CpuBackend.fast(0)) {
      ref = cpu.run(Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true)), BIG, x, 1);
    }
    Tolerance.assertClose(y, ref, "512 MiB volume");
    // 3) the same with a memory budget of one eighth of the volume: it runs in slabs, spilled to local
    // disk, and gives the same bytes
    Path small = tmp.resolve("small-budget");
    SparkTests.Result r3 = SparkTests.run(SparkTests.conf("input", rows.toString(), "output", small.toString(),
        "pipeline", "avgpool3d", "memory.budget", "64m", "device", SparkTests.device()));
    assertThat(r3.code()).as(r3.err()).isZero();
    assertThat(r3.out()).contains("volumes       1 in, 1 out").contains("1 slabbed");
    List<Row> got3 = SparkTests.spark().read().parquet(small.toString()).collectAsList();
    assertThat(got3).hasSize(1);
    assertThat(got3.get(0).getList(1)).containsExactly(32, 64, 64, 128);
    byte[] data3 = (byte[]) got3.get(0).get(3);
    assertThat(data3).as("slabbed under 64 MiB = whole volume, bit for bit, on " + SparkTests.device()).isEqualTo(data);
    float[] y3 = new float[data3.length / 4];
    ByteBuffer.wrap(data3).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(y3);
    Tolerance.assertClose(y3, ref, "512 MiB volume in slabs");
  }
}
