package io.volpool.io.parquet;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/**
 * The footers of the files a reader opens split after split, each read and parsed once. The rows of a
 * volume stored across rows are read row group by row group (each row its own split), and each split
 * opened its file anew, footer included: on the H100 the 64 range tasks of a 32 GiB
 * volume parsed 2,112 footers of 16 row groups each, 2.5 s of their read threads' time, while the
 * other read threads of each slab waited for the row. A split's row groups are those whose middle
 * lies in its range, as parquet's range filter takes them ({@link ParquetSplit}). Keeps the last
 * {@link #FILES} files'. Not thread-safe: one opener at a time, as {@link PlaneRowsInput} opens rows.
 */
public final class FooterCache {
  /** Files whose footers are kept: a range's rows span a few files in turn. */
  static final int FILES = 4;

  /** Footers by path and length (a file replaced under the same name is read again). */
  private final Map<String, ParquetMetadata> files = new LinkedHashMap<>(8, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, ParquetMetadata> eldest) {
      return size() > FILES;
    }
  };
  private long footersRead;

  /**
   * A reader of the row groups of split {@code s} of {@code file} ({@code p}), its footer parsed the first time
   * only. Each reader has read options of its own: closing a reader releases its options' decompressors.
   */
  ParquetFileReader open(ParquetSplit s, Path p, InputFile file, Configuration conf) throws IOException {
    ParquetReadOptions options = HadoopReadOptions.builder(conf, p).build();
    String key = s.path() + "#" + file.getLength();
    ParquetMetadata footer = files.get(key);
    if (footer == null) {
      try (SeekableInputStream in = file.newStream()) {
        footer = ParquetFileReader.readFooter(file, options, in);
      }
      footersRead++;
      files.put(key, footer);
    }
    List<BlockMetaData> mine = new ArrayList<>();
    for (BlockMetaData b : footer.getBlocks()) {
      long middle = b.getStartingPos() + b.getCompressedSize() / 2;
      if (middle >= s.start() && middle < s.start() + s.length()) {
        mine.add(b);
      }
    }
    SeekableInputStream in = file.newStream();
    try {
      return new ParquetFileReader(conf, p, new ParquetMetadata(footer.getFileMetaData(), mine), options, in);
    } catch (IOException | RuntimeException x) {
      in.close();
      throw x;
    }
  }

  /** Footers read and parsed so far. */
  long footersRead() {
    return footersRead;
  }
}
