package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.format.NpyArray;
import io.volpool.testing.Golden;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Outputs of any size: one volume stored in a single .npy, [3,64,768,768] (453
 * MiB), through fused (3 -> 16 channels) gives 2.2 GiB of output, more than one Parquet value or one
 * buffer holds. Under a 512 MiB budget it runs in slabs and streams out across rows as its slabs
 * finish; the rows equal, byte for byte, those of the same data stored across rows ("in pieces") and
 * run the same way.
 */
class LargeOutputTest {
  @Test
  void aSingleRowVolumeWhoseOutputExceedsTwoGibibytesStreamsToRows(@TempDir Path tmp) throws Exception {
    long[] shape = {3, 64, 768, 768};
    float[] x = new float[(int) (shape[0] * shape[1] * shape[2] * shape[3])];
    long state = 7;
    for (int i = 0; i < x.length; i++) {
      state = state * 6364136223846793005L + 1442695040888963407L;
      x[i] = (state >>> 40) / (float) (1 << 23) - 1f;
    }
    SparkTests.writeNpy(tmp.resolve("in/big.npy"), NpyArray.of(shape, x));
    x = null;
    Map<String, String> fused = SparkTests.caseSettings(Golden.get("fused_seed"));
    // 1) the single .npy volume straight to rows
    Path whole = tmp.resolve("from-one-row");
    Map<String, String> a = SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", whole.toString(), "output.format", "parquet", "output.layout", "rows", "output.rowBytes", "96m",
        "memory.budget", "512m");
    a.putAll(fused);
    SparkTests.Result r1 = SparkTests.run(a);
    assertThat(r1.code()).as(r1.err()).isZero();
    assertThat(r1.out()).contains("1 slabbed");
    // 2) the same data stored across rows (identity, rows of 16 MiB), then through fused
    Path pieces = tmp.resolve("pieces");
    SparkTests.Result cut = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", pieces.toString(), "output.format", "parquet", "output.layout", "rows", "output.rowBytes", "16m",
        "pipeline", "identity", "memory.budget", "512m"));
    assertThat(cut.code()).as(cut.err()).isZero();
    Path fromPieces = tmp.resolve("from-pieces");
    Map<String, String> b = SparkTests.conf("input", pieces.toString(), "output", fromPieces.toString(),
        "output.rowBytes", "96m", "memory.budget", "512m");
    b.putAll(fused);
    SparkTests.Result r2 = SparkTests.run(b);
    assertThat(r2.code()).as(r2.err()).isZero();

    List<Row> one = digests(whole);
    List<Row> two = digests(fromPieces);
    assertThat(one).as("rows of the output of the single-row volume").hasSizeGreaterThan(20);
    long bytes = one.stream().mapToLong(r -> r.getInt(3)).sum();
    assertThat(bytes).as("output bytes: more than 2 GiB").isGreaterThan(Integer.MAX_VALUE)
        .isEqualTo(16L * 63 * 767 * 767 * 4);
    assertThat(one.get(0).getInt(0)).isZero();
    assertThat(one.get(one.size() - 1).getInt(1)).isEqualTo(63);
    for (int i = 1; i < one.size(); i++) {
      assertThat(one.get(i).getInt(0)).as("rows follow each other").isEqualTo(one.get(i - 1).getInt(1));
    }
    assertThat(one).as("the same rows, byte for byte, as the data run in pieces").isEqualTo(two);
  }

  /** {@code d0, d1, sha256(data), length(data)} of every output row, in plane order. */
  private static List<Row> digests(Path out) {
    return SparkTests.spark().read().parquet(out.toString()).selectExpr("d0", "d1", "sha2(data, 256)", "length(data)")
        .orderBy("d0").collectAsList();
  }
}
