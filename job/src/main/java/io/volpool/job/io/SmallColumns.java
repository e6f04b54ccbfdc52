package io.volpool.job.io;

import io.volpool.io.CorruptInputException;
import io.volpool.io.Files2;
import io.volpool.io.parquet.ParquetSplit;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.io.ColumnIOFactory;
import org.apache.parquet.io.RecordReader;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;

/**
 * The driver's look at a few small top-level columns of a Parquet file ({@code id}, {@code shape},
 * {@code d0}, {@code d1}), row by row, never reading the tensor column. Row groups of zero rows
 * (pyarrow writes one for an empty table) are valid and hold nothing. Stateless.
 */
public final class SmallColumns {
  private SmallColumns() {}

  /** Called once per row, in file order. */
  public interface RowVisitor {
    /**
     * @param g the row's values of the requested columns
     * @param rowInFile the row's index in its file
     * @param group the row group holding it, as a split
     * @param rowInGroup the row's index in that row group
     */
    void row(Group g, long rowInFile, ParquetSplit group, long rowInGroup);
  }

  /** The file's schema cut to {@code columns} (those the file has). */
  public static MessageType project(MessageType schema, List<String> columns) {
    List<Type> keep = new ArrayList<>();
    for (String n : columns) {
      if (schema.containsField(n)) {
        keep.add(schema.getType(n));
      }
    }
    return new MessageType("volpool_small_columns", keep);
  }

  /**
   * Visits every row of {@code file}, reading only {@code columns}; returns the number of rows.
   *
   * @param folder the file's folder below the input (for the splits handed to the visitor)
   * @throws CorruptInputException naming the file when a row group cannot be read
   */
  public static long read(Path file, String folder, List<String> columns, Configuration conf, RowVisitor visitor)
      throws IOException {
    return read(file, folder, columns, conf, Long.MAX_VALUE, visitor);
  }

  /** The first row of {@code file}, only {@code columns} of it; null when the file has no rows. */
  public static Group firstRow(Path file, List<String> columns, Configuration conf) throws IOException {
    Group[] first = new Group[1];
    read(file, "", columns, conf, 1, (g, rowInFile, split, k) -> first[0] = g);
    return first[0];
  }

  /** Visits the first {@code maxRows} rows of {@code file} (reading only the row groups that hold them); returns how many. */
  private static long read(Path file, String folder, List<String> columns, Configuration conf, long maxRows,
      RowVisitor visitor) throws IOException {
    long rowInFile = 0;
    try (ParquetFileReader r = Files2.openParquet(file, conf)) {
      MessageType fileSchema = r.getFooter().getFileMetaData().getSchema();
      MessageType small = project(fileSchema, columns);
      r.setRequestedSchema(small);
      List<BlockMetaData> blocks = r.getFooter().getBlocks();
      for (int b = 0; b < blocks.size() && rowInFile < maxRows; b++) {
        BlockMetaData bm = blocks.get(b);
        if (bm.getRowCount() == 0) {
          continue; // parquet's reader steps over empty row groups by itself
        }
        PageReadStore pages = r.readNextRowGroup();
        if (pages == null || pages.getRowCount() != bm.getRowCount()) {
          throw new CorruptInputException(file + ": row group " + b + " could not be read (its footer says "
              + bm.getRowCount() + " rows)");
        }
        ParquetSplit split = new ParquetSplit(file.toString(), folder, bm.getStartingPos(), bm.getCompressedSize());
        RecordReader<Group> rr = new ColumnIOFactory().getColumnIO(small, fileSchema)
            .getRecordReader(pages, new GroupRecordConverter(small));
        long n = Math.min(bm.getRowCount(), maxRows - rowInFile);
        for (long k = 0; k < n; k++) {
          visitor.row(rr.read(), rowInFile + k, split, k);
        }
        rowInFile += n;
      }
    }
    return rowInFile;
  }
}
