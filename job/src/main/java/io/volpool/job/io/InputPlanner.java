package io.volpool.job.io;

import io.volpool.io.npy.NpyFileRef;
import io.volpool.io.parquet.ParquetSplit;
import io.volpool.spark.TaskPlan;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;

/**
 * Plans a job's tasks on the driver, as Spark plans file scans: lists the input (recursively,
 * skipping hidden {@code _} and {@code .} names as Spark does, and reporting what it skipped), cuts
 * Parquet files into splits on row-group boundaries from their footers, and packs splits or .npy
 * files into tasks of at most {@code maxSplitBytes} (plus an open cost per file), in input order.
 * The footers also give the number of input rows, against which the output is checked. Stateless.
 */
public final class InputPlanner {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(InputPlanner.class);

  /** Footers are read in parallel on the driver up to this many files; above, only a sample. */
  static final int FOOTER_THREADS = 8;

  /**
   * What the planner found.
   *
   * @param tasks the task plans, one per Spark partition
   * @param files input files taken
   * @param bytes their bytes
   * @param rows input volumes per the Parquet footers (for .npy input: -1, unknown until read)
   * @param skipped files not taken, with the reason, for the log and the summary
   * @param first the first input file (its schema decides the layout)
   * @param volumes volumes stored across rows, grouped by id from their rows (-1 for other input)
   * @param progressTotal what the progress line counts to: the rows, or the volumes the .npy headers declare (-1: unknown)
   */
  public record Plan(List<TaskPlan> tasks, long files, long bytes, long rows, List<String> skipped, Path first, long volumes,
      long progressTotal) {
    public Plan(List<TaskPlan> tasks, long files, long bytes, long rows, List<String> skipped, Path first) {
      this(tasks, files, bytes, rows, skipped, first, -1, rows);
    }

    public Plan(List<TaskPlan> tasks, long files, long bytes, long rows, List<String> skipped, Path first, long volumes) {
      this(tasks, files, bytes, rows, skipped, first, volumes, rows);
    }
  }

  private InputPlanner() {}

  /** How large a task's input may be, as Spark computes it: the max partition bytes, or less to spread over the cores. */
  public static long maxSplitBytes(long maxPartitionBytes, long openCost, long totalBytes, long fileCount, int cores) {
    long bytesPerCore = (totalBytes + fileCount * openCost) / Math.max(1, cores);
    return Math.min(maxPartitionBytes, Math.max(openCost, bytesPerCore));
  }

  /** Lists the input's files: {@code wanted} decides by name which are input; everything else is reported. */
  public static List<FileStatus> list(Path root, Configuration conf, java.util.function.Predicate<String> wanted,
      String kind, List<String> skipped) throws IOException {
    FileSystem fs = root.getFileSystem(conf);
    FileStatus st = fs.getFileStatus(root);
    List<FileStatus> out = new ArrayList<>();
    if (st.isFile()) {
      requireRegular(fs, st.getPath(), "input file");
      out.add(st);
      return out;
    }
    String base = fs.makeQualified(root).toUri().getPath();
    for (FileStatus f : files(fs, root)) {
      String rel = relative(base, f.getPath().toUri().getPath());
      String hidden = null;
      for (String part : rel.split("/")) {
        if (part.startsWith("_") || part.startsWith(".")) {
          hidden = part;
        }
      }
      if (hidden != null) {
        if (!rel.endsWith(".crc") && !rel.equals("_SUCCESS") && !rel.endsWith("/_SUCCESS")
            && !rel.startsWith("_volpool") && !rel.contains("/_volpool")) {
          skipped.add(rel + " (hidden: names starting with _ or . are not input)");
        }
        continue;
      }
      if (!wanted.test(f.getPath().getName())) {
        skipped.add(rel + " (not " + kind + ")");
        continue;
      }
      out.add(f);
    }
    out.sort(Comparator.comparing(f -> f.getPath().toString()));
    return out;
  }

  /**
   * Refuses a local path that is not a regular file (a named pipe, socket or device), which Hadoop's local
   * filesystem lists as a file: reading a pipe waits for a writer for ever, a device never ends.
   *
   * @throws SettingsException naming the path and what it is
   */
  public static void requireRegular(FileSystem fs, Path p, String what) {
    if (!"file".equals(fs.getScheme())) {
      return;
    }
    java.nio.file.Path local = java.nio.file.Paths.get(p.toUri().getPath());
    if (java.nio.file.Files.exists(local) && !java.nio.file.Files.isRegularFile(local)
        && !java.nio.file.Files.isDirectory(local)) {
      throw new io.volpool.conf.SettingsException(what + " " + local + " is not a regular file (a named pipe, socket or"
          + " device), which would block or never end when read; volpool reads regular files only: " + (what.startsWith(
              "input") ? "remove it or move it out of " + io.volpool.conf.VolpoolOptions.INPUT.key() : "name a regular file"));
    }
  }

  /**
   * Every file below {@code dir}, at any depth. On the local filesystem as plain statuses, folder by
   * folder: {@code FileSystem.listFiles}'s located statuses copy each file's permission, which the local
   * filesystem, without Hadoop's native library, finds by running {@code ls -ld} once per file (about 3
   * ms each on the H200 machine, 50 ms of a 16-file job's planning; seconds for thousands of files), and
   * nothing here needs permissions or block locations. Elsewhere {@code listFiles}, which object stores
   * answer with one flat listing instead of one per folder.
   */
  static List<FileStatus> files(FileSystem fs, Path dir) throws IOException {
    List<FileStatus> out = new ArrayList<>();
    if (!"file".equals(fs.getScheme())) {
      RemoteIterator<? extends FileStatus> it = fs.listFiles(dir, true);
      while (it.hasNext()) {
        out.add(it.next());
      }
      return out;
    }
    java.util.ArrayDeque<Path> dirs = new java.util.ArrayDeque<>(List.of(dir));
    // folders by their real path: a symbolic link to a folder already listed (a cycle such as sub/loop -> .., or a
    // second path to the same files) would read its volumes again, without end for a cycle
    java.util.Map<java.nio.file.Path, Path> seen = new java.util.HashMap<>();
    seen.put(realPath(fs, dir), dir);
    while (!dirs.isEmpty()) {
      RemoteIterator<FileStatus> it = fs.listStatusIterator(dirs.pop());
      while (it.hasNext()) {
        FileStatus f = it.next();
        if (f.isDirectory()) {
          java.nio.file.Path real = realPath(fs, f.getPath());
          Path before = seen.putIfAbsent(real, f.getPath());
          if (before != null) {
            throw new io.volpool.io.CorruptInputException("input folder " + dir + ": " + f.getPath().toUri().getPath()
                + " is a symbolic link to " + real + ", a folder the input already holds as " + before.toUri().getPath()
                + " (a cycle, or a second path to the same files), so its volumes would be read more than once; remove"
                + " the link or point " + io.volpool.conf.VolpoolOptions.INPUT.key() + " elsewhere");
          }
          dirs.push(f.getPath());
        } else {
          requireRegular(fs, f.getPath(), "input file");
          out.add(f);
        }
      }
    }
    return out;
  }

  private static java.nio.file.Path realPath(FileSystem fs, Path p) throws IOException {
    return io.volpool.io.Files2.local(fs.makeQualified(p)).toRealPath();
  }

  public static String relative(String base, String path) {
    String b = base.endsWith("/") ? base : base + "/";
    return path.startsWith(b) ? path.substring(b.length()) : new Path(path).getName();
  }

  /** The folder of {@code file} below {@code root} ("" at the root or when the input is one file). */
  static String folder(Path root, FileStatus file, Configuration conf) throws IOException {
    FileSystem fs = root.getFileSystem(conf);
    String base = fs.makeQualified(root).toUri().getPath();
    String rel = relative(base, file.getPath().toUri().getPath());
    int slash = rel.lastIndexOf('/');
    return slash < 0 ? "" : rel.substring(0, slash);
  }

  /** Plans Parquet input: every non-hidden file is Parquet (as Spark reads a folder). */
  public static Plan parquet(String input, Configuration conf, long maxPartitionBytes, long openCost, int cores)
      throws IOException {
    return parquet(input, conf, maxPartitionBytes, openCost, cores, f -> true);
  }

  /** As above, over the input files {@code take} accepts (an appending run's new files). */
  public static Plan parquet(String input, Configuration conf, long maxPartitionBytes, long openCost, int cores,
      java.util.function.Predicate<FileStatus> take) throws IOException {
    Path root = new Path(input);
    List<String> skipped = new ArrayList<>();
    List<FileStatus> files = list(root, conf, n -> true, "Parquet", skipped);
    files.removeIf(take.negate());
    List<ParquetMetadata> footers = footers(files, conf);
    long total = 0;
    long rows = 0;
    for (int i = 0; i < files.size(); i++) {
      total += files.get(i).getLen();
      for (BlockMetaData b : footers.get(i).getBlocks()) {
        rows += b.getRowCount();
      }
    }
    long max = maxSplitBytes(maxPartitionBytes, openCost, total, files.size(), cores);
    List<ParquetSplit> splits = new ArrayList<>();
    List<Long> sizes = new ArrayList<>();
    for (int i = 0; i < files.size(); i++) {
      FileStatus f = files.get(i);
      String folder = folder(root, f, conf);
      List<BlockMetaData> blocks = footers.get(i).getBlocks();
      long start = -1;
      long end = -1;
      long splitRows = 0;
      for (BlockMetaData b : blocks) {
        if (b.getRowCount() == 0) {
          continue; // an empty row group (pyarrow writes one for an empty table) holds nothing to read
        }
        long bs = b.getStartingPos();
        long be = bs + b.getCompressedSize();
        if (start >= 0 && be - start > max) {
          splits.add(new ParquetSplit(f.getPath().toString(), folder, start, end - start, splitRows));
          sizes.add(end - start);
          start = -1;
          splitRows = 0;
        }
        if (start < 0) {
          start = bs;
        }
        end = be;
        splitRows += b.getRowCount();
      }
      if (start >= 0) {
        splits.add(new ParquetSplit(f.getPath().toString(), folder, start, end - start, splitRows));
        sizes.add(end - start);
      }
    }
    List<TaskPlan> tasks = new ArrayList<>();
    List<ParquetSplit> cur = new ArrayList<>();
    long curBytes = 0;
    for (int i = 0; i < splits.size(); i++) {
      long sz = sizes.get(i) + openCost;
      if (!cur.isEmpty() && curBytes + sz > max) {
        tasks.add(new TaskPlan(tasks.size(), List.copyOf(cur), List.of(), List.of(), curBytes));
        cur.clear();
        curBytes = 0;
      }
      cur.add(splits.get(i));
      curBytes += sz;
    }
    if (!cur.isEmpty()) {
      tasks.add(new TaskPlan(tasks.size(), List.copyOf(cur), List.of(), List.of(), curBytes));
    }
    return new Plan(tasks, files.size(), total, rows, skipped, files.isEmpty() ? null : files.get(0).getPath());
  }

  /** Plans .npy input: files named {@code *.npy} (any case); other files are reported as skipped. */
  public static Plan npy(String input, Configuration conf, long maxPartitionBytes, long openCost, int cores)
      throws IOException {
    return npy(input, conf, maxPartitionBytes, openCost, cores, f -> true);
  }

  /** As above, over the input files {@code take} accepts (an appending run's new files). */
  public static Plan npy(String input, Configuration conf, long maxPartitionBytes, long openCost, int cores,
      java.util.function.Predicate<FileStatus> take) throws IOException {
    return npy(input, conf, maxPartitionBytes, openCost, cores, take, null);
  }

  /**
   * As above; with {@code spread} (output across rows), a C-order file whose volumes are each larger
   * than a task runs as ranges of their output planes in several tasks ({@link #npyRanges}).
   */
  public static Plan npy(String input, Configuration conf, long maxPartitionBytes, long openCost, int cores,
      java.util.function.Predicate<FileStatus> take, io.volpool.op.Pipeline spread) throws IOException {
    Path root = new Path(input);
    List<String> skipped = new ArrayList<>();
    List<FileStatus> files = list(root, conf, n -> n.toLowerCase(Locale.ROOT).endsWith(".npy"), ".npy", skipped);
    files.removeIf(take.negate());
    long total = files.stream().mapToLong(FileStatus::getLen).sum();
    long max = maxSplitBytes(maxPartitionBytes, openCost, total, files.size(), cores);
    FileSystem fs = root.getFileSystem(conf);
    boolean single = fs.getFileStatus(root).isFile();
    String base = fs.makeQualified(root).toUri().getPath();
    List<TaskPlan> tasks = new ArrayList<>();
    List<NpyFileRef> cur = new ArrayList<>();
    long curBytes = 0;
    for (FileStatus f : files) {
      long sz = f.getLen() + openCost;
      String rel = single ? f.getPath().getName() : relative(base, f.getPath().toUri().getPath());
      NpyFileRef ref = new NpyFileRef(f.getPath().toString(), rel, f.getLen(), f.getModificationTime());
      if (!cur.isEmpty() && curBytes + sz > max) {
        tasks.add(new TaskPlan(tasks.size(), List.of(), List.copyOf(cur), List.of(), curBytes));
        cur.clear();
        curBytes = 0;
      }
      // a file larger than a task starts a task (above) whether or not it is spread: spread, its volumes as ranges of
      // their output planes in tasks of their own
      if (spread != null && f.getLen() > max && npyRanges(f, ref, conf, spread, max, tasks)) {
        continue;
      }
      cur.add(ref);
      curBytes += sz;
    }
    if (!cur.isEmpty()) {
      tasks.add(new TaskPlan(tasks.size(), List.of(), List.copyOf(cur), List.of(), curBytes));
    }
    return new Plan(tasks, files.size(), total, -1, skipped, files.isEmpty() ? null : files.get(0).getPath(), -1,
        npyVolumes(files, conf));
  }

  /** The header of .npy file {@code f}, from its first bytes only. */
  public static io.volpool.format.NpyHeader npyHeader(FileStatus f, Configuration conf) throws IOException {
    int n = io.volpool.format.NpyHeader.prefixBytes(f.getLen(), io.volpool.format.NpyHeader.DEFAULT_MAX_HEADER_BYTES);
    byte[] prefix = new byte[n];
    // local files through the raw filesystem: the checksum layer fails on names holding ':'
    try (org.apache.hadoop.fs.FSDataInputStream in = io.volpool.io.Files2.fs(f.getPath(), conf).open(f.getPath())) {
      in.readFully(0, prefix);
    }
    return io.volpool.format.NpyHeader.parse(prefix, f.getLen(), f.getPath().toString(),
        io.volpool.format.NpyHeader.DEFAULT_MAX_HEADER_BYTES);
  }

  /**
   * Plans the volumes of .npy file {@code f} as ranges of their output planes when each is larger than
   * {@code max}, adding tasks of at most {@code max} stored bytes (at least one range each) to
   * {@code tasks}. Ranges are multiples of {@link io.volpool.backend.SlabRanges#ALIGN} planes, so every
   * range's slabs are slabs of a whole run and the output is bit for bit a single task's. False, adding
   * nothing, when the file stays whole: Fortran order, a header or shape the task will refuse (it names
   * what is wrong), a shape the pipeline cannot take, or volumes that fit a task. Reads the header only.
   */
  static boolean npyRanges(FileStatus f, NpyFileRef ref, Configuration conf, io.volpool.op.Pipeline pipeline, long max,
      List<TaskPlan> tasks) {
    io.volpool.format.NpyHeader h;
    try {
      h = npyHeader(f, conf);
    } catch (IOException | RuntimeException e) {
      // the task that reads it says what is wrong
      LOG.warn("volpool: {} is larger than a task but its header cannot be read ({}); it runs in one task", f.getPath(),
          String.valueOf(e.getMessage()).lines().findFirst().orElse(""));
      return false;
    }
    long[] s = h.shape();
    if ((h.fortranOrder() && !h.isPlainF32()) || (s.length != 4 && s.length != 5)) {
      return false;
    }
    int o = s.length - 4;
    long count = o == 1 ? s[0] : 1;
    io.volpool.op.VolumeShape shape;
    io.volpool.op.SlabPlan sp;
    try {
      if (count < 1 || count > Integer.MAX_VALUE) {
        return false;
      }
      shape = new io.volpool.op.VolumeShape(Math.toIntExact(s[o]), Math.toIntExact(s[o + 1]), Math.toIntExact(s[o + 2]),
          Math.toIntExact(s[o + 3]));
      sp = new io.volpool.op.SlabPlan(pipeline, shape);
    } catch (IllegalArgumentException | ArithmeticException e) {
      return false;
    }
    long inPlane = (long) shape.c() * shape.h() * shape.w() * h.type().itemSize();
    int[][] r = io.volpool.backend.SlabRanges.forTasks(sp.output().d(), inPlane * shape.d(), max);
    if (r.length < 2) {
      return false;
    }
    List<io.volpool.io.npy.NpyRange> cur = new ArrayList<>();
    long curBytes = 0;
    for (int i = 0; i < count; i++) {
      for (int[] k : r) {
        int[] in = sp.inputPlanes(k[0], k[1]);
        long bytes = (in[1] - in[0]) * inPlane;
        if (!cur.isEmpty() && curBytes + bytes > max) {
          tasks.add(new TaskPlan(tasks.size(), List.of(), List.of(), List.of(), List.copyOf(cur), curBytes));
          cur.clear();
          curBytes = 0;
        }
        cur.add(new io.volpool.io.npy.NpyRange(ref, i, o == 1, shape, k[0], k[1], in[0], in[1]));
        curBytes += bytes;
      }
    }
    tasks.add(new TaskPlan(tasks.size(), List.of(), List.of(), List.of(), List.copyOf(cur), curBytes));
    return true;
  }

  /**
   * The volumes the .npy files hold, from their headers (read in parallel), for the progress line's total;
   * -1 when a header cannot be read here (the task that reads the file names what is wrong with it).
   */
  static long npyVolumes(List<FileStatus> files, Configuration conf) {
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(FOOTER_THREADS, files.size())));
    try {
      List<Future<Long>> counts = new ArrayList<>();
      for (FileStatus f : files) {
        counts.add(pool.submit(() -> {
          long[] shape = npyHeader(f, conf).shape();
          return shape.length == 5 ? shape[0] : 1L;
        }));
      }
      long total = 0;
      for (Future<Long> c : counts) {
        total += c.get();
      }
      return total;
    } catch (java.util.concurrent.ExecutionException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    } finally {
      pool.shutdownNow();
    }
  }

  /** Every file's footer, read in parallel; a file that is not Parquet is named in the error. */
  static List<ParquetMetadata> footers(List<FileStatus> files, Configuration conf) throws IOException {
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(FOOTER_THREADS, files.size())));
    try {
      List<Future<ParquetMetadata>> fs = new ArrayList<>();
      for (FileStatus f : files) {
        fs.add(pool.submit(() -> footer(f, conf)));
      }
      List<ParquetMetadata> out = new ArrayList<>();
      for (Future<ParquetMetadata> f : fs) {
        try {
          out.add(f.get());
        } catch (java.util.concurrent.ExecutionException e) {
          if (e.getCause() instanceof RuntimeException r) {
            throw r;
          }
          throw new IOException(e.getCause());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while reading footers", e);
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  /** The codecs volpool reads Parquet pages of (parquet-java's own, without Hadoop's native libraries). */
  static final java.util.Set<org.apache.parquet.hadoop.metadata.CompressionCodecName> READABLE = java.util.EnumSet.of(
      org.apache.parquet.hadoop.metadata.CompressionCodecName.UNCOMPRESSED,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.SNAPPY,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.GZIP,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.ZSTD,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.LZ4,
      org.apache.parquet.hadoop.metadata.CompressionCodecName.LZ4_RAW);

  private static ParquetMetadata footer(FileStatus f, Configuration conf) {
    ParquetMetadata footer;
    try (ParquetFileReader r = io.volpool.io.Files2.openParquet(f.getPath(), conf)) {
      footer = r.getFooter();
    } catch (IOException | RuntimeException e) {
      throw new io.volpool.io.CorruptInputException(f.getPath() + ": not a readable Parquet file ("
          + String.valueOf(e.getMessage()).lines().findFirst().orElse("") + "); every file in a Parquet input folder"
          + " must be Parquet (move other files out, or name them _x or .x to hide them)");
    }
    for (BlockMetaData b : footer.getBlocks()) {
      for (org.apache.parquet.hadoop.metadata.ColumnChunkMetaData c : b.getColumns()) {
        if (!READABLE.contains(c.getCodec())) {
          throw new io.volpool.io.CorruptInputException(f.getPath() + ": column " + c.getPath().toDotString()
              + " is compressed with " + c.getCodec() + ", which volpool cannot read (it reads " + READABLE + "); rewrite"
              + " the file with one of those (pyarrow: compression='zstd' or 'snappy')");
        }
      }
    }
    return footer;
  }
}
