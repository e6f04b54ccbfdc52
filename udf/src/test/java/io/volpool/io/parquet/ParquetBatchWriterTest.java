package io.volpool.io.parquet;

import io.volpool.io.OutputSpec;
import io.volpool.io.VolumeSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.backend.PhaseTimes;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.page.DataPage;
import org.apache.parquet.column.page.DataPageV1;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.column.page.PageReader;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.MessageType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Parquet writer's tensor pages, written straight from a batch's output buffer: from a heap
 * buffer (the CPU backend) as its array, and from a direct one (pinned GPU output, a mapped spill) in
 * place; each page carries a CRC of exactly its bytes, which parquet's reader verifies.
 */
class ParquetBatchWriterTest {
  static final VolumeShape SHAPE = new VolumeShape(2, 3, 4, 5);

  static final class Item implements VolumeSource {
    final String id;

    Item(String id) {
      this.id = id;
    }

    @Override
    public String record() {
      return id;
    }

    @Override
    public VolumeShape shape() {
      return SHAPE;
    }

    @Override
    public void copyTo(io.volpool.backend.VolumeSink dst) {
      throw new UnsupportedOperationException();
    }
  }

  /** A batch output of {@code n} volumes, each after a gap of {@link ParquetBatchWriter#GAP} bytes. */
  static ByteBuffer batch(boolean direct, int n, long seed, long[] offsets, List<byte[]> volumes) {
    int vb = (int) SHAPE.bytes();
    ByteBuffer b = (direct ? ByteBuffer.allocateDirect(n * (vb + ParquetBatchWriter.GAP))
        : ByteBuffer.allocate(n * (vb + ParquetBatchWriter.GAP))).order(ByteOrder.LITTLE_ENDIAN);
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < n; i++) {
      offsets[i] = (long) i * (vb + ParquetBatchWriter.GAP) + ParquetBatchWriter.GAP;
      byte[] v = new byte[vb];
      ByteBuffer w = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN);
      for (int k = 0; k < vb / 4; k++) {
        w.putFloat((float) r.nextDouble());
      }
      b.put((int) offsets[i], v);
      volumes.add(v);
    }
    return b;
  }

  static Path write(Path dir, List<byte[]> expected) throws IOException {
    MessageType schema = TensorLayout.npyOutputSchema(false);
    OutputSpec spec = new OutputSpec(io.volpool.conf.FileFormat.PARQUET, schema.toString(), List.of(TensorLayout.ID), "UNCOMPRESSED", 1 << 20,
        Map.of("k", "v"), 512L << 20, io.volpool.io.npy.NpyPlanesInPlace.Mode.NONE);
    Path p = dir.resolve("out.parquet");
    try (ParquetBatchWriter w = new ParquetBatchWriter(new org.apache.hadoop.fs.Path(p.toUri()), spec, new Configuration(),
        new PhaseTimes())) {
      int id = 0;
      for (boolean direct : new boolean[] {false, true}) {
        long[] offsets = new long[3];
        ByteBuffer out = batch(direct, 3, direct ? 2 : 1, offsets, expected);
        List<VolumeSource> items = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
          items.add(new Item("v" + id++));
        }
        w.write(items, SHAPE, out, offsets);
      }
    }
    return p;
  }

  /** Every tensor page's value bytes, read with page checksums verified. */
  static List<byte[]> readPages(Path p) throws IOException {
    Configuration conf = new Configuration();
    ParquetReadOptions opts = HadoopReadOptions.builder(conf).usePageChecksumVerification(true).build();
    List<byte[]> got = new ArrayList<>();
    try (ParquetFileReader r = ParquetFileReader.open(HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(p.toUri()),
        conf), opts)) {
      var data = r.getFooter().getFileMetaData().getSchema().getColumnDescription(new String[] {TensorLayout.DATA});
      PageReadStore rg;
      while ((rg = r.readNextRowGroup()) != null) {
        PageReader pr = rg.getPageReader(data);
        DataPage page;
        while ((page = pr.readPage()) != null) {
          byte[] b = ((DataPageV1) page).getBytes().toByteArray();
          // PLAIN binary: a 4-byte length, then the value (no levels: the column is required)
          int len = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getInt();
          assertThat(len).isEqualTo(b.length - 4);
          byte[] v = new byte[len];
          System.arraycopy(b, 4, v, 0, len);
          got.add(v);
        }
      }
    }
    return got;
  }

  @Test
  void pagesFromHeapAndDirectBuffersCarryChecksumsOfTheirBytes(@TempDir Path dir) throws IOException {
    List<byte[]> expected = new ArrayList<>();
    Path p = write(dir, expected);
    List<byte[]> got = readPages(p);
    assertThat(got).hasSize(6);
    for (int i = 0; i < 6; i++) {
      assertThat(got.get(i)).as("volume %d (%s buffer)", i, i < 3 ? "heap" : "direct").isEqualTo(expected.get(i));
    }
  }

  @Test
  void aFlippedByteInADirectPageIsCaughtByItsChecksum(@TempDir Path dir) throws IOException {
    List<byte[]> expected = new ArrayList<>();
    Path p = write(dir, expected);
    // the last volume came from the direct buffer: find its bytes in the file and flip one
    byte[] file = java.nio.file.Files.readAllBytes(p);
    byte[] last = expected.get(5);
    int at = indexOf(file, last);
    assertThat(at).as("the last volume's bytes in the file").isPositive();
    try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
      f.seek(at + 17);
      f.write(file[at + 17] ^ 0x40);
    }
    assertThatThrownBy(() -> readPages(p)).hasStackTraceContaining("checksum");
  }

  static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int k = 0; k < needle.length; k++) {
        if (hay[i + k] != needle[k]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
