package io.volpool.io.parquet;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.PhaseTimes;
import io.volpool.io.InputRescale;
import io.volpool.io.PageGate;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Splits of one file read with its footer parsed once: each split gives its own row groups' rows, as without the cache. */
class FooterCacheTest {
  @Test
  void eachSplitGetsItsOwnRowGroupsFromOneParsedFooter(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("rows.parquet");
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(file.toUri());
    Configuration conf = new Configuration();
    // one row group a row, as the job writes rows of a volume stored across rows
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(p).withConf(conf).withType(PlaneRowsInputTest.SCHEMA)
        .withCompressionCodec(CompressionCodecName.UNCOMPRESSED).withDictionaryEncoding(false).withRowGroupSize(1L)
        .withMinRowCountForPageSizeCheck(1).withMaxRowCountForPageSizeCheck(1).build()) {
      for (int[] r : PlaneRowsInputTest.ROWS) {
        w.write(PlaneRowsInputTest.row(r[0], r[1], false));
      }
    }
    List<BlockMetaData> blocks;
    try (ParquetFileReader r = ParquetFileReader.open(HadoopInputFile.fromPath(p, conf))) {
      blocks = r.getRowGroups();
    }
    assertThat(blocks).hasSize(PlaneRowsInputTest.ROWS.length);
    List<ParquetSplit> splits = new ArrayList<>();
    for (BlockMetaData b : blocks) {
      splits.add(new ParquetSplit(p.toString(), "", b.getStartingPos(), b.getCompressedSize()));
    }
    BlockMetaData b1 = blocks.get(1);
    BlockMetaData b2 = blocks.get(2);
    // a split of two row groups, and the same splits again (a later range of the volume)
    splits.add(new ParquetSplit(p.toString(), "", b1.getStartingPos(), b2.getStartingPos() + b2.getCompressedSize()
        - b1.getStartingPos()));
    splits.addAll(splits.subList(0, blocks.size()));
    // ranges that start inside a row group and end at or just past another's middle: the middle decides, as
    // parquet's range filter has it (a rule by start, or by a middle at the end included, gives other groups)
    long middle2 = b2.getStartingPos() + b2.getCompressedSize() / 2;
    splits.add(new ParquetSplit(p.toString(), "", b1.getStartingPos() + 1, middle2 - b1.getStartingPos() - 1));
    splits.add(new ParquetSplit(p.toString(), "", b1.getStartingPos() + 1, middle2 - b1.getStartingPos()));
    FooterCache cache = new FooterCache();
    TensorLayout layout = TensorLayout.detect(PlaneRowsInputTest.SCHEMA, null, null);
    for (ParquetSplit s : splits) {
      List<int[]> cached = planes(new ParquetVolumeInput(List.of(s), layout, InputRescale.NONE, conf, new PhaseTimes(),
          cache));
      List<int[]> plain = planes(new ParquetVolumeInput(List.of(s), layout, conf, new PhaseTimes()));
      assertThat(cached).as("split at %d of %d bytes", s.start(), s.length()).containsExactlyElementsOf(plain);
      assertThat(plain).isNotEmpty();
    }
    assertThat(planes(new ParquetVolumeInput(List.of(splits.get(1)), layout, InputRescale.NONE, conf, new PhaseTimes(),
        cache))).containsExactly(PlaneRowsInputTest.ROWS[1]);
    assertThat(planes(new ParquetVolumeInput(List.of(splits.get(blocks.size())), layout, InputRescale.NONE, conf,
        new PhaseTimes(), cache))).containsExactly(PlaneRowsInputTest.ROWS[1], PlaneRowsInputTest.ROWS[2]);
    assertThat(cache.footersRead()).isEqualTo(1);
    // the file replaced under its name (other rows, another length): its footer is read again
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(p).withConf(conf).withType(PlaneRowsInputTest.SCHEMA)
        .withWriteMode(org.apache.parquet.hadoop.ParquetFileWriter.Mode.OVERWRITE)
        .withCompressionCodec(CompressionCodecName.UNCOMPRESSED).withDictionaryEncoding(false).build()) {
      w.write(PlaneRowsInputTest.row(0, 13, false));
    }
    ParquetSplit whole = new ParquetSplit(p.toString(), "", 4, java.nio.file.Files.size(file) - 4);
    assertThat(planes(new ParquetVolumeInput(List.of(whole), layout, InputRescale.NONE, conf, new PhaseTimes(), cache)))
        .containsExactly(new int[] {0, 13});
    assertThat(cache.footersRead()).isEqualTo(2);
  }

  /** The planes of every row the input gives, read whole (the values checked by PlaneRowsInputTest). */
  private static List<int[]> planes(ParquetVolumeInput in) {
    List<int[]> out = new ArrayList<>();
    try (in) {
      for (ParquetVolumeInput.Row r = in.next(PageGate.UNLIMITED); r != null; r = in.next(PageGate.UNLIMITED)) {
        out.add(r.planes());
      }
    }
    return out;
  }
}
