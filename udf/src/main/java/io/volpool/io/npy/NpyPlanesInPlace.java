package io.volpool.io.npy;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.format.Dtype;
import io.volpool.format.Npy;
import io.volpool.io.VolumeSource;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Writes ranges of a volume's output planes, from any task in any order, into the one {@code .npy} the
 * volume belongs to, so a volume spread over many tasks, or of any size, is one file with no byte copied
 * afterwards ({@link Mode}): on a local or shared POSIX filesystem ({@code file:}, where tasks on every
 * host see one file) by position into the staged file ({@link #FILES}); on HDFS as one part per range and
 * channel in the task's work folder, which the driver joins in order with {@link FileSystem#concat}
 * ({@link #joinParts}).
 *
 * <p>The commit protocol stays the job's: a task writes its planes, makes them durable ({@code fsync}; a
 * closed HDFS file) when it closes, and only then writes one marker per range it wrote into its own work
 * folder ({@code _volpool_planes/<file>/<volume>.<d0>-<d1>}, holding the volume's planes and the file's
 * volumes), which the task commit publishes like any file. The driver counts the committed markers: every
 * volume's output planes once, or the run fails ({@link Marker#tiles}); it then removes them. Written in
 * place, a failed or speculative attempt writes the same planes as the one that commits (the output is a
 * function of the input), so a partial write is overwritten by the attempt that commits; parts are files of
 * their attempt, committed or discarded with it. Owned by the task's output writer.
 */
public final class NpyPlanesInPlace implements AutoCloseable {
  /** How a .npy output takes a volume's planes from several tasks, by the output's filesystem. */
  public enum Mode {
    /** It does not: each .npy is written by one task (filesystems with neither positioned writes nor a join). */
    NONE,
    /** By position into one staged file: a local or shared POSIX filesystem ({@code file:}). */
    POSITIONED,
    /**
     * As one part file per range and channel in the task's work folder, joined in order by the driver with
     * {@link FileSystem#concat} once every task has committed (HDFS: metadata only, no byte is copied).
     */
    PARTS,
    /**
     * As {@link #PARTS}, joined by the driver with server-side copies into one multipart upload per file
     * ({@code s3a://}: UploadPartCopy, no byte through the driver); the file's first part carries its
     * header, since every part of an upload but the last must hold 5 MiB ({@link PartsJoin}).
     */
    COPIED_PARTS;

    /** Whether the tasks write parts into their work folders (the driver joins them). */
    public boolean parts() {
      return this == PARTS || this == COPIED_PARTS;
    }

    /** The mode of an output at {@code output}. */
    public static Mode of(Path output, Configuration conf) throws IOException {
      FileSystem fs = io.volpool.io.Files2.fs(output, conf);
      if ("file".equals(fs.getUri().getScheme())) {
        return POSITIONED;
      }
      if ("s3a".equals(fs.getUri().getScheme())) {
        return COPIED_PARTS;
      }
      Path probe = fs.makeQualified(output);
      while (probe.getParent() != null && !fs.exists(probe)) {
        probe = probe.getParent();
      }
      // HDFS refuses concat in an encryption zone, though it declares the capability for the filesystem
      return fs.hasPathCapability(probe, org.apache.hadoop.fs.CommonPathCapabilities.FS_CONCAT)
          && !fs.getFileStatus(probe).isEncrypted() ? PARTS : NONE;
    }
  }

  /** The folder of the markers, in a task's work folder and then in the staged output (hidden from readers). */
  public static final String MARKERS = "_volpool_planes";
  /** The folder of the parts ({@link Mode#PARTS}), in a task's work folder and then in the staged output. */
  public static final String PARTS = "_volpool_parts";
  /** The name of a file's header part, the file its parts are joined onto. */
  public static final String HEADER = "header";
  /**
   * The folder of the files being written in place, in the staged output: a resumed run keeps it with the
   * committed tasks (it removes what else a dead run left there); the driver moves its files into the output
   * once every task has committed.
   */
  public static final String FILES = "_volpool_inplace";

  private final Mode mode;
  private final Path staged;
  private final Path work;
  private final Configuration conf;
  private final PhaseTimes times;
  /** Open files by their path under the output. */
  private final Map<String, FileChannel> open = new LinkedHashMap<>();
  /** Open parts ({@link Mode#PARTS}) by file and volume: one stream per channel, and the plane its run has reached. */
  private final Map<String, PartRun> parts = new LinkedHashMap<>();
  /** Planes written, by file and volume: {@code relative -> index -> d0 -> d1}, with the volume's planes and volumes. */
  private final Map<String, Map<Integer, TreeMap<Integer, Integer>>> written = new LinkedHashMap<>();
  private final Map<String, long[]> sizes = new LinkedHashMap<>();
  /** The id whose volume each file holds (two ids, {@code a} and {@code a.npy}, name one file). */
  private final Map<String, String> owners = new java.util.HashMap<>();
  private long starts;
  private long files;

  /**
   * @param staged the folder the job commit publishes (the committer's output path): files go to
   *     {@code staged/_volpool_inplace/<relative path>}
   * @param work the task attempt's work folder, where its markers (and parts) go
   */
  public NpyPlanesInPlace(Mode mode, Path staged, Path work, Configuration conf, PhaseTimes times) {
    if (mode == Mode.NONE) {
      throw new IllegalArgumentException("no .npy output in ranges on this filesystem");
    }
    this.mode = mode;
    this.staged = staged;
    this.work = work;
    this.conf = conf;
    this.times = times;
  }

  /** Volumes whose planes from plane 0 this task wrote (each volume counts once over all its ranges). */
  public long starts() {
    return starts;
  }

  /** Files whose first volume's planes from plane 0 this task wrote (each file counts once). */
  public long files() {
    return files;
  }

  /**
   * Writes output planes {@code [d0, d1)} of every channel of the volume of {@code item}, laid out
   * {@code [C, d1 - d0, H, W]} in {@code out} from byte {@code offset}.
   */
  public void write(VolumeSource item, VolumeShape outShape, Dtype dtype, ByteBuffer out, long offset, int d0, int d1)
      throws IOException {
    long t0 = System.nanoTime();
    VolumeSource.FilePlace place = item.filePlace();
    String relative = place != null ? place.relative() : NpyVolumeWriter.fileName(item.outputId(), item.record());
    String owner = owners.putIfAbsent(relative, item.outputId());
    if (owner != null && !owner.equals(item.outputId())) {
      throw new io.volpool.io.BadRecordException(item.record(), "its output file " + relative + " is written by another"
          + " record already (id=" + owner + "): each id names one .npy file (an id and the same id with .npy name the"
          + " same one), so ids must be unique; give each volume its own id or write Parquet output");
    }
    int index = place != null ? place.index() : 0;
    long[] leading = place != null ? place.leading() : new long[0];
    int count = place != null ? place.count() : 1;
    long[] shape = new long[leading.length + 4];
    System.arraycopy(leading, 0, shape, 0, leading.length);
    for (int k = 0; k < 4; k++) {
      shape[leading.length + k] = outShape.toArray()[k];
    }
    byte[] header = Npy.header(shape, dtype);
    if (mode.parts()) {
      writeParts(relative, index, header, outShape, dtype, out, offset, d0, d1);
    } else {
      writePositioned(relative, index, header, outShape, dtype, out, offset, d0, d1);
    }
    written.computeIfAbsent(relative, r -> new TreeMap<>()).computeIfAbsent(index, i -> new TreeMap<>()).put(d0, d1);
    sizes.put(relative, new long[] {outShape.d(), count, outShape.c(), (long) outShape.h() * outShape.w() * dtype.itemSize()});
    if (d0 == 0) {
      starts++;
      if (index == 0) {
        files++;
      }
    }
    times.add(Phase.WRITE, System.nanoTime() - t0);
  }

  private void writePositioned(String relative, int index, byte[] header, VolumeShape outShape, Dtype dtype,
      ByteBuffer out, long offset, int d0, int d1) throws IOException {
    try {
      positioned(relative, index, header, outShape, dtype, out, offset, d0, d1);
    } catch (IOException e) {
      // the channel's own message ("No space left on device") names no file
      throw new IOException(path(relative) + ": " + e.getMessage(), e);
    }
  }

  /**
   * Where plane {@code d} of channel {@code c} of volume {@code index} starts in a C-order .npy whose data starts
   * at {@code dataOffset}, of volumes of {@code channels} channels of {@code planes} planes of {@code planeBytes}.
   */
  public static long at(long dataOffset, long index, long c, long d, long channels, long planes, long planeBytes) {
    return dataOffset + ((index * channels + c) * planes + d) * planeBytes;
  }

  private java.nio.file.Path path(String relative) {
    // a relative path is never parsed on its own as a URI: a name may hold ':'
    return java.nio.file.Path.of(new Path(staged.toString() + "/" + FILES + "/" + relative).toUri().getPath());
  }

  private void positioned(String relative, int index, byte[] header, VolumeShape outShape, Dtype dtype,
      ByteBuffer out, long offset, int d0, int d1) throws IOException {
    FileChannel ch = open.get(relative);
    if (ch == null) {
      // one file open at a time: a task of many small volumes (across rows) must not hold a descriptor for each
      closeChannels();
      ch = open(relative);
      writeFully(ch, ByteBuffer.wrap(header), 0);
      open.put(relative, ch);
    }
    long planeBytes = (long) outShape.h() * outShape.w() * dtype.itemSize();
    int n = d1 - d0;
    for (int c = 0; c < outShape.c(); c++) {
      ByteBuffer part = out.slice((int) (offset + c * n * planeBytes), (int) (n * planeBytes));
      writeFully(ch, part, at(header.length, index, c, d0, outShape.c(), outShape.d(), planeBytes));
    }
  }

  /** The channels' streams of one run of planes of one volume, and the plane after the run's last. */
  private static final class PartRun {
    final java.io.OutputStream[] channels;
    int end;

    PartRun(java.io.OutputStream[] channels, int end) {
      this.channels = channels;
      this.end = end;
    }

    void close() throws IOException {
      IOException first = null;
      for (java.io.OutputStream os : channels) {
        try {
          os.close();
        } catch (IOException e) {
          first = first == null ? e : first;
        }
      }
      if (first != null) {
        throw first;
      }
    }
  }

  /**
   * Part {@code <volume>.<channel>.<d0>} of each channel in the task's work folder, continued while the planes
   * follow on; the file's first range writes its header part.
   */
  private void writeParts(String relative, int index, byte[] header, VolumeShape outShape, Dtype dtype,
      ByteBuffer out, long offset, int d0, int d1) throws IOException {
    FileSystem fs = io.volpool.io.Files2.fs(work, conf);
    Path dir = new Path(work.toString() + "/" + PARTS + "/" + relative);
    if (index == 0 && d0 == 0) {
      try (var os = fs.create(new Path(dir, HEADER), false)) {
        os.write(header);
      }
    }
    String key = relative + "#" + index;
    PartRun run = parts.get(key);
    if (run != null && run.end != d0) {
      parts.remove(key).close();
      run = null;
    }
    if (run == null) {
      // one volume's streams open at a time (each HDFS stream holds its writer threads and a datanode pipeline)
      closeParts();
    }
    if (run == null) {
      java.io.OutputStream[] os = new java.io.OutputStream[outShape.c()];
      for (int c = 0; c < os.length; c++) {
        os[c] = fs.create(new Path(dir, index + "." + c + "." + d0), false);
      }
      if (mode == Mode.COPIED_PARTS && index == 0 && d0 == 0) {
        // the file's first part begins with its header (the header part marks the file, as for concat)
        os[0].write(header);
      }
      run = new PartRun(os, d0);
      parts.put(key, run);
    }
    long planeBytes = (long) outShape.h() * outShape.w() * dtype.itemSize();
    int n = d1 - d0;
    byte[] chunk = new byte[(int) Math.min(1 << 20, n * planeBytes)];
    for (int c = 0; c < outShape.c(); c++) {
      ByteBuffer part = out.slice((int) (offset + c * n * planeBytes), (int) (n * planeBytes));
      while (part.hasRemaining()) {
        int k = Math.min(chunk.length, part.remaining());
        part.get(chunk, 0, k);
        run.channels[c].write(chunk, 0, k);
      }
    }
    run.end = d1;
  }

  /** A part's order in its file: volume, channel, first plane ({@code <volume>.<channel>.<d0>}); null if not a part. */
  public static long[] partOrder(String name) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("([0-9]+)\\.([0-9]+)\\.([0-9]+)").matcher(name);
    return m.matches() ? new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3))}
        : null;
  }

  /**
   * Joins the committed parts under {@code staged} into their files: ({@link Mode#PARTS}) each in order onto its
   * header part with one {@link FileSystem#concat} (no byte copied), then moved to its path in {@code staged};
   * ({@link Mode#COPIED_PARTS}) each file's parts copied in order into it by {@code copies}. Run by
   * the driver once every task has committed and before the output is counted.
   *
   * @return the files made
   */
  public static int joinParts(FileSystem fs, Path staged, Mode mode, PartsJoin copies) throws IOException {
    Path root = new Path(staged, PARTS);
    if (!fs.exists(root)) {
      return 0;
    }
    String base = fs.makeQualified(root).toUri().getPath() + "/";
    List<Path> headers = new ArrayList<>();
    java.util.Set<Path> withParts = new java.util.LinkedHashSet<>();
    org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it = fs.listFiles(root, true);
    while (it.hasNext()) {
      Path p = it.next().getPath();
      if (p.getName().equals(HEADER)) {
        headers.add(p);
      } else if (partOrder(p.getName()) != null) {
        withParts.add(p.getParent());
      }
    }
    for (Path h : headers) {
      withParts.remove(h.getParent());
    }
    if (!withParts.isEmpty()) {
      // the header part is written by the task of the file's first planes: committed parts without it are a file
      // some of whose ranges were never committed, which the count of planes would also find
      throw new IOException("the committed parts of " + withParts.iterator().next() + " have no header part (the task"
          + " of the file's first planes did not commit); nothing was moved into the output");
    }
    // files are joined independently: several at once, so a run of many spread files does not wait on each in turn
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(
        Math.max(1, Math.min(headers.size(), JOIN_THREADS)), r -> {
          Thread t = new Thread(r, "volpool-npy-join");
          t.setDaemon(true);
          return t;
        });
    try {
      List<java.util.concurrent.Future<?>> joins = new ArrayList<>();
      for (Path h : headers) {
        joins.add(pool.submit(() -> {
          joinOne(fs, staged, mode, copies, base, h);
          return null;
        }));
      }
      IOException first = null;
      for (java.util.concurrent.Future<?> f : joins) {
        try {
          f.get();
        } catch (java.util.concurrent.ExecutionException e) {
          IOException io = e.getCause() instanceof IOException x ? x : new IOException(e.getCause().getMessage(),
              e.getCause());
          if (first == null) {
            first = io;
          } else {
            first.addSuppressed(io);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new java.io.InterruptedIOException("interrupted while joining the .npy parts under " + root);
        }
      }
      if (first != null) {
        throw first;
      }
    } finally {
      pool.shutdownNow();
    }
    fs.delete(root, true);
    return headers.size();
  }

  /** Files whose parts are joined at once (HDFS concat and S3 copies are requests the store serves in parallel). */
  static final int JOIN_THREADS = 16;

  /** Joins the parts beside header part {@code h} into their file (see {@link #joinParts}). */
  private static void joinOne(FileSystem fs, Path staged, Mode mode, PartsJoin copies, String base, Path h)
      throws IOException {
    Path dir = h.getParent();
    List<Path> ps = new ArrayList<>();
    for (org.apache.hadoop.fs.FileStatus st : fs.listStatus(dir)) {
      if (st.isFile() && partOrder(st.getPath().getName()) != null) {
        ps.add(st.getPath());
      }
    }
    ps.sort((a, b) -> java.util.Arrays.compare(partOrder(a.getName()), partOrder(b.getName())));
    String relative = fs.makeQualified(dir).toUri().getPath().substring(base.length());
    Path target = new Path(staged.toString() + "/" + relative);
    if (mode == Mode.COPIED_PARTS) {
      // the header is in the first part: the parts alone, in order, are the file
      copies.join(fs, ps, target);
      return;
    }
    if (!ps.isEmpty()) {
      fs.concat(h, ps.toArray(new Path[0]));
    }
    fs.mkdirs(target.getParent());
    if (!fs.rename(h, target)) {
      throw new IOException("could not move " + h + " to " + target);
    }
  }

  private FileChannel open(String relative) throws IOException {
    java.nio.file.Path p = path(relative);
    Files.createDirectories(p.getParent());
    return FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
  }

  private static void writeFully(FileChannel ch, ByteBuffer b, long at) throws IOException {
    while (b.hasRemaining()) {
      at += ch.write(b, at);
    }
  }

  /**
   * Makes the planes durable, then writes a marker for each run of planes written; the task commit then
   * publishes the markers. A marker never exists for planes that are not on disk.
   */
  @Override
  public void close() throws IOException {
    long t0 = System.nanoTime();
    closeParts();
    closeChannels();
    FileSystem fs = io.volpool.io.Files2.fs(work, conf);
    for (Map.Entry<String, Map<Integer, TreeMap<Integer, Integer>>> f : written.entrySet()) {
      long[] size = sizes.get(f.getKey());
      for (Map.Entry<Integer, TreeMap<Integer, Integer>> v : f.getValue().entrySet()) {
        for (int[] run : Marker.merge(v.getValue())) {
          Marker m = new Marker(f.getKey(), v.getKey(), run[0], run[1], (int) size[0], (int) size[1], (int) size[2],
              size[3]);
          try (var os = fs.create(m.path(work), false)) {
            os.write(m.content().getBytes(java.nio.charset.StandardCharsets.US_ASCII));
          }
        }
      }
    }
    written.clear();
    times.add(Phase.WRITE, System.nanoTime() - t0);
  }

  /** Closes the open parts: on HDFS each is then complete on its datanodes (before any marker names it). */
  private void closeParts() throws IOException {
    IOException first = null;
    for (PartRun run : parts.values()) {
      try {
        run.close();
      } catch (IOException e) {
        first = first == null ? e : first;
      }
    }
    parts.clear();
    if (first != null) {
      throw first;
    }
  }

  /** Makes the open files' planes durable ({@code fsync}) and closes them (before any marker names them). */
  private void closeChannels() throws IOException {
    IOException first = null;
    for (Map.Entry<String, FileChannel> f : open.entrySet()) {
      try {
        f.getValue().force(true);
        f.getValue().close();
      } catch (IOException e) {
        first = first == null ? new IOException(path(f.getKey()) + ": " + e.getMessage(), e) : first;
      }
    }
    open.clear();
    if (first != null) {
      throw first;
    }
  }

  /**
   * A committed range of planes written in place: output planes {@code [d0, d1)} of volume {@code index} of
   * file {@code relative}, whose volumes have {@code planes} output planes of {@code channels} channels of
   * {@code planeBytes} each, and which holds {@code volumes}.
   */
  public record Marker(String relative, int index, int d0, int d1, int planes, int volumes, int channels,
      long planeBytes) {
    /** A marker whose channels and plane size are not known (-1). */
    public Marker(String relative, int index, int d0, int d1, int planes, int volumes) {
      this(relative, index, d0, d1, planes, volumes, -1, -1);
    }

    /** Its path under {@code root} (a task's work folder, or the staged output). */
    public Path path(Path root) {
      return new Path(root.toString() + "/" + MARKERS + "/" + relative + "/" + index + "." + d0 + "-" + d1);
    }

    /** The byte after the last this marker's planes fill in a file whose data starts at {@code dataOffset}. */
    public long end(long dataOffset) {
      return at(dataOffset, index, channels - 1, d1, channels, planes, planeBytes);
    }

    String content() {
      return planes + " " + volumes + " " + channels + " " + planeBytes + "\n";
    }

    /** The marker at {@code p}, a path below a {@link #MARKERS} folder, with its file's {@code content}. */
    public static Marker parse(String relativeToMarkers, String content) {
      int slash = relativeToMarkers.lastIndexOf('/');
      String name = relativeToMarkers.substring(slash + 1);
      java.util.regex.Matcher m = java.util.regex.Pattern.compile("([0-9]+)\\.([0-9]+)-([0-9]+)").matcher(name);
      String[] c = content.trim().split(" ");
      if (slash < 0 || !m.matches() || (c.length != 2 && c.length != 4)) {
        throw new IllegalArgumentException("not a marker of planes written in place: " + relativeToMarkers);
      }
      return new Marker(relativeToMarkers.substring(0, slash), Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
          Integer.parseInt(m.group(3)), Integer.parseInt(c[0]), Integer.parseInt(c[1]),
          c.length == 4 ? Integer.parseInt(c[2]) : -1, c.length == 4 ? Long.parseLong(c[3]) : -1);
    }

    /** The markers under {@code root} (a committed task's folder, or the staged output); none when it has none. */
    public static List<Marker> read(FileSystem fs, Path root) throws IOException {
      Path dir = new Path(root, MARKERS);
      List<Marker> out = new ArrayList<>();
      if (!fs.exists(dir)) {
        return out;
      }
      String base = fs.makeQualified(dir).toUri().getPath() + "/";
      org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it = fs.listFiles(dir, true);
      while (it.hasNext()) {
        org.apache.hadoop.fs.LocatedFileStatus f = it.next();
        if (f.getPath().getName().startsWith(".")) {
          continue; // a checksum file of a local filesystem's
        }
        String rel = f.getPath().toUri().getPath().substring(base.length());
        byte[] b = new byte[(int) Math.min(f.getLen(), 64)];
        try (var in = fs.open(f.getPath())) {
          in.readFully(b);
        }
        out.add(parse(rel, new String(b, java.nio.charset.StandardCharsets.US_ASCII)));
      }
      return out;
    }

    /** Adjacent runs {@code d0 -> d1} joined, in order. */
    public static List<int[]> merge(java.util.SortedMap<Integer, Integer> runs) {
      List<int[]> out = new ArrayList<>();
      for (Map.Entry<Integer, Integer> r : runs.entrySet()) {
        if (!out.isEmpty() && out.get(out.size() - 1)[1] == r.getKey()) {
          out.get(out.size() - 1)[1] = r.getValue();
        } else {
          out.add(new int[] {r.getKey(), r.getValue()});
        }
      }
      return out;
    }

    /**
     * The first problem with {@code markers}, the committed ones of an output: a volume of a file they
     * name whose planes are not each written exactly once, said with the file, the volume and the planes;
     * null when every volume of every such file is whole.
     */
    public static String tiles(List<Marker> markers) {
      Map<String, List<Marker>> byFile = new TreeMap<>();
      for (Marker m : markers) {
        byFile.computeIfAbsent(m.relative(), r -> new ArrayList<>()).add(m);
      }
      for (Map.Entry<String, List<Marker>> f : byFile.entrySet()) {
        List<Marker> ms = f.getValue();
        int volumes = ms.get(0).volumes();
        for (int i = 0; i < volumes; i++) {
          String name = f.getKey() + (volumes > 1 ? "[" + i + "]" : "");
          int index = i;
          List<Marker> v = new ArrayList<>(ms.stream().filter(m -> m.index() == index).toList());
          if (v.isEmpty()) {
            return "the committed output " + name + " lacks all its output planes";
          }
          String problem = io.volpool.backend.SlabRanges.tilingProblem(v.stream().map(m -> new long[] {m.d0(), m.d1()})
              .toList(), v.get(0).planes());
          if (problem != null) {
            return "the committed output " + name + " " + problem;
          }
        }
      }
      return null;
    }
  }
}
