package io.volpool.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.io.PositionOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChannelOutputFileTest {
  static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < n; i++) {
      b[i] = (byte) r.nextInt(256);
    }
    return b;
  }

  /**
   * Bytes, arrays under, at and over the stream's 1 MiB buffer (from an offset within them), heap and
   * direct buffers, in an order that leaves the buffer part full before each large write: the file holds
   * them in order and the position counts each.
   */
  @Test
  void everyWayOfWritingLandsInOrderWhateverItsSize(@TempDir Path dir) throws IOException {
    Path p = dir.resolve("sub/out.bin");
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    byte[] big = random(3 * (1 << 20) + 12_345, 1);
    byte[] exact = random(1 << 20, 2);
    byte[] small = random(70_000, 3);
    ByteBuffer direct = ByteBuffer.allocateDirect(2 * (1 << 20) + 7);
    direct.put(random(direct.capacity(), 4)).flip();
    try (PositionOutputStream out = ChannelOutputFile.of(new org.apache.hadoop.fs.Path(p.toUri()), new Configuration())
        .create(0)) {
      out.write(7);
      expected.write(7);
      out.write(small, 5, small.length - 5);
      expected.write(small, 5, small.length - 5);
      out.write(big, 3, big.length - 3);
      expected.write(big, 3, big.length - 3);
      out.write(exact, 0, exact.length);
      expected.write(exact, 0, exact.length);
      byte[] d = new byte[direct.remaining()];
      direct.duplicate().get(d);
      assertThat(((java.nio.channels.WritableByteChannel) out).write(direct)).isEqualTo(d.length);
      expected.write(d, 0, d.length);
      out.write(small, 0, 10);
      expected.write(small, 0, 10);
      assertThat(out.getPos()).isEqualTo(expected.size());
    }
    assertThat(Files.readAllBytes(p)).isEqualTo(expected.toByteArray());
  }
}
