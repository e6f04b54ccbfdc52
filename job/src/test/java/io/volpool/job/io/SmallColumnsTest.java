package io.volpool.job.io;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.io.parquet.ParquetVolumeInput;
import io.volpool.io.parquet.TensorLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The driver's reads of the small columns: every row, or only the first (the batch warm-up's shape). */
class SmallColumnsTest {
  private static final MessageType SCHEMA = MessageTypeParser.parseMessageType("message v { required binary id (UTF8);"
      + " required group shape (LIST) { repeated group list { required int32 element; } }"
      + " required binary dtype (UTF8); required binary data; }");

  /** Rows {@code v0..v(n-1)} of shape {@code [1, 1, 1, i + 1]}, in row groups of a few rows each. */
  private static Path write(Path dir, int n) throws Exception {
    Path f = dir.resolve("rows.parquet");
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(f.toUri()))
        .withConf(new Configuration()).withType(SCHEMA).withRowGroupSize(1024L)
        .withPageRowCountLimit(2).withMinRowCountForPageSizeCheck(1).withWriterVersion(ParquetProperties.WriterVersion.PARQUET_1_0)
        .build()) {
      for (int i = 0; i < n; i++) {
        Group g = new SimpleGroupFactory(SCHEMA).newGroup().append("id", "v" + i);
        Group s = g.addGroup("shape");
        for (int d : new int[] {1, 1, 1, i + 1}) {
          s.addGroup("list").append("element", d);
        }
        w.write(g.append("dtype", "float32").append("data", Binary.fromConstantByteArray(new byte[4 * (i + 1)])));
      }
    }
    return f;
  }

  @Test
  void firstRowIsRowZeroAndEveryRowIsVisitedInOrder(@TempDir Path tmp) throws Exception {
    Path f = write(tmp, 300);
    Configuration conf = new Configuration();
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(f.toUri());
    try (var r = io.volpool.io.Files2.openParquet(p, conf)) {
      assertThat(r.getFooter().getBlocks()).as("row groups in the test file").hasSizeGreaterThan(2);
    }
    Group first = SmallColumns.firstRow(p, List.of(TensorLayout.ID, TensorLayout.SHAPE), conf);
    assertThat(ParquetVolumeInput.RowValues.id(first)).isEqualTo("v0");
    assertThat(ParquetVolumeInput.RowValues.longList(first, TensorLayout.SHAPE)).containsExactly(1L, 1L, 1L, 1L);
    List<String> ids = new ArrayList<>();
    long rows = SmallColumns.read(p, "", List.of(TensorLayout.ID), conf, (g, rowInFile, split, k) -> {
      assertThat(rowInFile).isEqualTo(ids.size());
      ids.add(ParquetVolumeInput.RowValues.id(g));
    });
    assertThat(rows).isEqualTo(300);
    assertThat(ids).hasSize(300).startsWith("v0", "v1").endsWith("v299");
  }

  @Test
  void aFileOfNoRowsHasNoFirstRow() throws Exception {
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(
        SmallColumnsTest.class.getResource("/parquet/empty_row_group.parquet").toURI());
    assertThat(SmallColumns.firstRow(p, List.of(TensorLayout.SHAPE), new Configuration())).isNull();
  }
}
