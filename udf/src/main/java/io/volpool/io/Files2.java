package io.volpool.io;

import java.io.IOException;
import java.nio.file.Paths;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.LocalInputFile;

/**
 * How volpool opens files so that any legal file name works: Hadoop's checksumming local
 * filesystem builds a sidecar name ({@code .NAME.crc}) by parsing the name as a URI and fails on
 * names holding {@code :}, so local files are opened directly (java.nio) and moved with the raw
 * local filesystem; other filesystems go through Hadoop as usual. Stateless.
 */
public final class Files2 {
  private Files2() {}

  /** The filesystem of {@code p}, without the checksum layer for local files. */
  public static FileSystem fs(Path p, Configuration conf) throws IOException {
    FileSystem fs = p.getFileSystem(conf);
    return fs instanceof LocalFileSystem l ? l.getRawFileSystem() : fs;
  }

  /**
   * The local path of a qualified {@code file:} path, for any Unicode name. {@code Paths.get(URI)}
   * refuses the URIs Hadoop builds for names outside ASCII ("Bad escape"): Hadoop leaves those
   * characters unescaped, java.nio expects them percent-encoded. The decoded path is what both mean.
   */
  public static java.nio.file.Path local(Path p) {
    return Paths.get(p.toUri().getPath());
  }

  /** The Hadoop {@code file:} path of a local path, for any Unicode name. */
  public static Path hadoop(java.nio.file.Path p) {
    return new Path("file", null, p.toAbsolutePath().toString());
  }

  /**
   * Opens {@code p} for reading its footer and rows, with {@code conf}'s Parquet settings.
   * {@code ParquetFileReader.open(InputFile)} alone builds a fresh Hadoop {@code Configuration} for its
   * options, which parses Hadoop's default XML resources again: 20-50 ms for each footer the driver
   * reads and 170 ms when the job counts its committed files on the H200 (wall-clock profiles).
   */
  public static org.apache.parquet.hadoop.ParquetFileReader openParquet(Path p, Configuration conf) throws IOException {
    return org.apache.parquet.hadoop.ParquetFileReader.open(parquet(p, conf),
        org.apache.parquet.HadoopReadOptions.builder(conf, p).build());
  }

  /** A Parquet input file for {@code p}. */
  public static InputFile parquet(Path p, Configuration conf) throws IOException {
    if ("file".equals(p.toUri().getScheme()) || (p.toUri().getScheme() == null
        && "file".equals(p.getFileSystem(conf).getScheme()))) {
      java.nio.file.Path path = local(p.getFileSystem(conf).makeQualified(p));
      // named by its path in parquet's own messages ("... is not a Parquet file"), not by Object.toString
      return new LocalInputFile(path) {
        @Override
        public String toString() {
          return path.toString();
        }
      };
    }
    return HadoopInputFile.fromPath(p, conf);
  }

  /** {@code name} in folder {@code dir}, for any legal name: {@code new Path(dir, name)} parses a name holding {@code :} as a URI and fails. */
  public static Path child(Path dir, String name) {
    return new Path(dir.toString() + "/" + name);
  }

  /** What a {@link #merge} does with a file its destination holds already. */
  @FunctionalInterface
  public interface Clash {
    /** Throws to stop the merge (what was moved before stays moved); returns to have {@code existing} replaced. */
    void check(Path existing) throws IOException;
  }

  /**
   * Moves {@code from} into folder {@code dir} under its own name: a file, or a folder {@code dir} lacks, by one
   * rename; a folder {@code dir} has, merged into it entry by entry. A file {@code dir} holds already goes to
   * {@code clash} first. How the job commit gathers its committed tasks' files and an append adds its run's.
   */
  public static void merge(FileSystem fs, FileStatus from, Path dir, Clash clash) throws IOException {
    Path target = child(dir, from.getPath().getName());
    if (from.isFile() && fs.exists(target)) {
      clash.check(target);
      fs.delete(target, false);
    }
    if (from.isFile() || !fs.exists(target)) {
      if (!fs.rename(from.getPath(), target)) {
        throw new IOException("could not move " + from.getPath() + " to " + target);
      }
    } else {
      for (FileStatus c : fs.listStatus(from.getPath())) {
        merge(fs, c, target, clash);
      }
    }
  }
}
