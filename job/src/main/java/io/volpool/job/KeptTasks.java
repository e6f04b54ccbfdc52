package io.volpool.job;

import io.volpool.job.commit.CommittedOutput;
import io.volpool.job.commit.OutputCommit;
import io.volpool.job.io.InputPlanner;
import io.volpool.spark.TaskPlan;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tasks a resumed run keeps of the earlier run it takes over ({@code spark.volpool.output.mode=resume}),
 * each checked before it is trusted: its committed files' footers readable and made by a run of the same
 * fingerprint, and the volumes they hold the ones its plan reads. A task that fails a check is removed
 * and runs again. Immutable once made.
 *
 * @param tasks the kept tasks by plan index, with the counts their files and plans hold
 * @param counts their counts summed, for the commit's check
 */
record KeptTasks(SortedMap<Integer, CommittedOutput.TaskCounts> tasks, CommittedOutput.TaskCounts counts) {
  private static final Logger LOG = LoggerFactory.getLogger(KeptTasks.class);
  static final KeptTasks NONE = new KeptTasks(new TreeMap<>(), new CommittedOutput.TaskCounts(0, 0, 0, 0));

  /** Volumes (rows, for volumes across rows) the kept tasks read: what the progress line need not count. */
  long progress() {
    return counts.read();
  }

  /** Volumes the kept tasks hold: those starting at plane 0 (a volume written across rows has several rows). */
  long volumes() {
    return counts.starts();
  }

  /** The summary's account of a resumed run: the run it took over, tasks kept and run, volumes kept. */
  Map<String, Object> describe(OutputCommit out, InputPlanner.Plan plan) {
    if (out.resumes() == null) {
      return Map.of();
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("from_run", out.resumes());
    m.put("tasks_kept", (long) tasks.size());
    m.put("tasks_run", (long) (plan.tasks().size() - tasks.size()));
    m.put("volumes_kept", volumes());
    return m;
  }

  /**
   * Checks what the earlier run committed against {@code plan} and {@code fingerprint}, removing what
   * fails; returns what is kept.
   */
  static KeptTasks check(OutputCommit out, InputPlanner.Plan plan, boolean npyOut, boolean rowsOut, boolean planeRows,
      String fingerprint, Configuration conf) throws IOException {
    return check(out, plan, npyOut, rowsOut, planeRows, fingerprint, false, conf);
  }

  /**
   * The same, for a run that sets bad records aside ({@code quarantine}) or not: a kept task's side file of bad
   * records set aside counts with its files; a run that does not set them aside keeps no task that did (it runs
   * again, and fails on them as that run asks).
   */
  static KeptTasks check(OutputCommit out, InputPlanner.Plan plan, boolean npyOut, boolean rowsOut, boolean planeRows,
      String fingerprint, boolean quarantine, Configuration conf) throws IOException {
    if (out.resumes() == null) {
      return NONE;
    }
    SortedMap<Integer, Path> found = out.keptTasks();
    SortedMap<Integer, CommittedOutput.TaskCounts> kept = new TreeMap<>();
    CommittedOutput.TaskCounts sum = new CommittedOutput.TaskCounts(0, 0, 0, 0);
    for (Map.Entry<Integer, Path> e : found.entrySet()) {
      int i = e.getKey();
      String why = null;
      CommittedOutput.TaskCounts c = null;
      if (i >= plan.tasks().size()) {
        why = "the plan has " + plan.tasks().size() + " tasks";
      } else {
        TaskPlan t = plan.tasks().get(i);
        try {
          FileSystem fs = io.volpool.io.Files2.fs(e.getValue(), conf);
          boolean folder = fs.getFileStatus(e.getValue()).isDirectory();
          io.volpool.job.commit.SetAside bad = folder ? io.volpool.job.commit.SetAside.count(e.getValue(), conf)
              : io.volpool.job.commit.SetAside.NONE;
          // on S3 the task's side file is one of its uploads, unreadable (so uncounted) until the commit
          boolean setAside = folder ? bad.records() > 0 : OutputCommit.setsAside(fs, e.getValue());
          if (setAside && !quarantine) {
            why = "it set " + (folder ? bad.records() + " " : "") + "bad records aside, and this run does not ("
                + io.volpool.conf.VolpoolOptions.BAD_RECORDS_PATH.key() + " is unset)";
          } else if (folder) {
            c = countFolder(e.getValue(), i, t, npyOut, rowsOut, planeRows, fingerprint, conf, out.staging(), bad);
          } else if (setAside) {
            why = "on S3 a kept task's bad records set aside cannot be counted before the commit";
          } else {
            // an upload record (S3): the files are not readable before the commit completes them, which counts them
            c = rowsOut || planeRows || npyOut ? null : planned(t, planeRows);
            if (c == null) {
              why = "on S3 a kept task's files are counted only for one volume per Parquet row";
            }
          }
        } catch (IOException | RuntimeException ex) {
          why = "its files cannot be read (" + String.valueOf(ex.getMessage()).lines().findFirst().orElse("") + ")";
        }
        if (c == null && why == null) {
          why = "its files do not hold what its plan reads, or another run's fingerprint";
        }
      }
      if (why != null) {
        LOG.warn("volpool: task {} of run {} runs again: {}", i, out.resumes(), why);
        out.dropTask(i);
        continue;
      }
      kept.put(i, c);
      sum = sum.plus(c);
    }
    return new KeptTasks(kept, sum);
  }

  /** What a task's plan reads: the rows of its splits (volumes; for volumes across rows, rows) and ranges run. */
  private static CommittedOutput.TaskCounts planned(TaskPlan t, boolean planeRows) {
    long rows = 0;
    for (io.volpool.io.parquet.ParquetSplit s : t.splits()) {
      rows += s.rows();
    }
    for (io.volpool.io.PlaneVolume v : t.volumes()) {
      // the rows it owns: a range of a volume also reads the rows its neighbours own (the halo), which they count
      rows += v.rows().stream().filter(v::owns).count();
    }
    if (!t.ranges().isEmpty()) {
      // ranges of .npy volumes: the range from plane 0 counts its volume read
      long volumes = t.ranges().stream().filter(io.volpool.io.npy.NpyRange::counts).count();
      return new CommittedOutput.TaskCounts(volumes, volumes, volumes, t.ranges().size());
    }
    return new CommittedOutput.TaskCounts(rows, rows, rows, planeRows ? t.volumes().size() : 0);
  }

  /**
   * Whether the parts folder {@code dir} of a kept task holds every channel of the planes {@code m} names, each
   * channel's parts starting in {@code [d0, d1)} summing to the planes' bytes, and the file's header part with
   * its first planes.
   */
  private static boolean partsHold(FileSystem fs, Path dir, io.volpool.io.npy.NpyPlanesInPlace.Marker m)
      throws IOException {
    if (m.channels() < 1 || !fs.exists(dir)) {
      return false;
    }
    if (m.index() == 0 && m.d0() == 0 && !fs.exists(new Path(dir, io.volpool.io.npy.NpyPlanesInPlace.HEADER))) {
      return false;
    }
    long[] bytes = new long[m.channels()];
    for (FileStatus st : fs.listStatus(dir)) {
      long[] o = io.volpool.io.npy.NpyPlanesInPlace.partOrder(st.getPath().getName());
      if (o != null && o[0] == m.index() && o[1] < m.channels() && o[2] >= m.d0() && o[2] < m.d1()) {
        bytes[(int) o[1]] += st.getLen();
      }
    }
    long want = (long) (m.d1() - m.d0()) * m.planeBytes();
    return java.util.Arrays.stream(bytes).allMatch(b -> b == want);
  }

  /** Whether the staged file {@code f} exists and reaches the last byte of the planes {@code m} names. */
  private static boolean holds(FileSystem fs, Path f, io.volpool.io.npy.NpyPlanesInPlace.Marker m) throws IOException {
    if (m.channels() < 1 || !fs.exists(f)) {
      return false;
    }
    long len = fs.getFileStatus(f).getLen();
    byte[] prefix = new byte[io.volpool.format.NpyHeader.prefixBytes(len, io.volpool.format.NpyHeader.DEFAULT_MAX_HEADER_BYTES)];
    try (var in = fs.open(f)) {
      in.readFully(prefix);
    }
    return len >= m.end(io.volpool.format.NpyHeader.parseHeader(prefix, len, f.toString(),
        io.volpool.format.NpyHeader.DEFAULT_MAX_HEADER_BYTES).dataOffset());
  }


  /**
   * The counts of a committed task that wrote its planes into .npy files in place: its markers must name
   * exactly the planes its plan runs (the planes are in the staged files, durable before the markers were
   * written); null when they do not.
   */
  private static CommittedOutput.TaskCounts inPlace(TaskPlan t, List<io.volpool.io.npy.NpyPlanesInPlace.Marker> markers,
      boolean planeRows) {
    Map<String, SortedMap<Integer, Integer>> want = new TreeMap<>();
    Map<String, Boolean> whole = new TreeMap<>();
    long starts = 0;
    for (io.volpool.io.npy.NpyRange r : t.ranges()) {
      want.computeIfAbsent(r.file().relative() + "#" + r.index(), k -> new TreeMap<>()).put(r.outFrom(), r.outTo());
    }
    for (io.volpool.io.PlaneVolume v : t.volumes()) {
      String key = io.volpool.io.npy.NpyVolumeWriter.fileName(v.id(), v.record()) + "#0";
      int[] planes = v.outputPlanes();
      if (planes == null) {
        whole.put(key, true);
        starts++;
      } else {
        want.computeIfAbsent(key, k -> new TreeMap<>()).put(planes[0], planes[1]);
        starts += planes[0] == 0 ? 1 : 0;
      }
    }
    Map<String, SortedMap<Integer, Integer>> got = new TreeMap<>();
    for (io.volpool.io.npy.NpyPlanesInPlace.Marker m : markers) {
      String key = m.relative() + "#" + m.index();
      if (whole.containsKey(key) && (m.d0() != 0 || m.d1() != m.planes())) {
        return null;
      }
      if (!whole.containsKey(key)) {
        got.computeIfAbsent(key, k -> new TreeMap<>()).put(m.d0(), m.d1());
      } else {
        whole.put(key, false);
      }
    }
    if (whole.containsValue(true) || !got.keySet().equals(want.keySet())) {
      return null;
    }
    for (String k : want.keySet()) {
      List<int[]> a = io.volpool.io.npy.NpyPlanesInPlace.Marker.merge(want.get(k));
      List<int[]> b = io.volpool.io.npy.NpyPlanesInPlace.Marker.merge(got.get(k));
      if (a.size() != b.size() || java.util.stream.IntStream.range(0, a.size())
          .anyMatch(i -> !java.util.Arrays.equals(a.get(i), b.get(i)))) {
        return null;
      }
    }
    if (!t.ranges().isEmpty()) {
      return planned(t, planeRows);
    }
    CommittedOutput.TaskCounts p = planned(t, planeRows);
    return new CommittedOutput.TaskCounts(p.read(), starts, starts, p.slabbed());
  }

  /**
   * The counts of a committed task's folder (Rename commits), or null when its files were made by another
   * fingerprint or do not hold what its plan reads.
   */
  private static CommittedOutput.TaskCounts countFolder(Path dir, int index, TaskPlan t, boolean npyOut, boolean rowsOut,
      boolean planeRows, String fingerprint, Configuration conf, Path staging, io.volpool.job.commit.SetAside bad)
      throws IOException {
    CommittedOutput.TaskCounts c = countFolder(dir, index, t, npyOut, rowsOut, planeRows, fingerprint, conf, staging,
        bad.records(), bad.files());
    return c == null ? null : new CommittedOutput.TaskCounts(c.read(), c.written(), c.starts(), c.slabbed(), bad.records());
  }

  private static CommittedOutput.TaskCounts countFolder(Path dir, int index, TaskPlan t, boolean npyOut, boolean rowsOut,
      boolean planeRows, String fingerprint, Configuration conf, Path staging, long q, java.util.Set<String> qFiles)
      throws IOException {
    FileSystem fs = io.volpool.io.Files2.fs(dir, conf);
    if (npyOut) {
      List<io.volpool.io.npy.NpyPlanesInPlace.Marker> markers = io.volpool.io.npy.NpyPlanesInPlace.Marker.read(fs, dir);
      if (!markers.isEmpty() || !t.ranges().isEmpty()) {
        boolean parts = fs.exists(new Path(dir, io.volpool.io.npy.NpyPlanesInPlace.PARTS));
        for (io.volpool.io.npy.NpyPlanesInPlace.Marker m : markers) {
          // written in place, the planes are in the staged file: without it, or with it cut short of them, the
          // markers name planes that are nowhere; as parts, they are in the task's folder, each channel's whole
          // (a driver killed while merging the folder may have moved some of them out)
          if (parts ? !partsHold(fs, new Path(dir.toString() + "/" + io.volpool.io.npy.NpyPlanesInPlace.PARTS + "/"
              + m.relative()), m) : !holds(fs, new Path(staging.toString() + "/" + io.volpool.io.npy.NpyPlanesInPlace.FILES
              + "/" + m.relative()), m)) {
            return null;
          }
        }
        return inPlace(t, markers, planeRows);
      }
    }
    if (!npyOut) {
      org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it = fs.listFiles(dir, true);
      while (it.hasNext()) {
        FileStatus f = it.next();
        String n = f.getPath().getName();
        if (!n.endsWith(".parquet") || n.startsWith("_") || n.startsWith(".")) {
          continue;
        }
        try (org.apache.parquet.hadoop.ParquetFileReader r = io.volpool.io.Files2.openParquet(f.getPath(), conf)) {
          Map<String, String> meta = r.getFooter().getFileMetaData().getKeyValueMetaData();
          if (!fingerprint.equals(meta.get(io.volpool.io.parquet.ParquetBatchWriter.FINGERPRINT_KEY))) {
            return null;
          }
          // written by this task of the plan, not copied from another task's folder (its rows would be another's)
          if (!String.valueOf(index).equals(meta.get(io.volpool.io.parquet.ParquetBatchWriter.TASK_KEY))) {
            LOG.warn("volpool: {} in task {}'s folder was written by task {}", f.getPath().getName(), index,
                meta.get(io.volpool.io.parquet.ParquetBatchWriter.TASK_KEY));
            return null;
          }
        }
      }
    }
    CommittedOutput c = CommittedOutput.count(dir, npyOut, rowsOut, conf);
    if (npyOut && !npyFiles(fs, dir, t, qFiles)) {
      return null;
    }
    if (npyOut) {
      // .npy output: one file per input file (or per volume across rows), each counted from its header; an input
      // file set aside as a bad record has none
      long want = t.files().isEmpty() ? t.volumes().size() : t.files().stream().filter(f -> !qFiles.contains(f.path()))
          .count();
      return c.files() == want ? new CommittedOutput.TaskCounts(c.rows(), c.rows(), c.rows(), planeRows
          ? t.volumes().size() : 0) : null;
    }
    CommittedOutput.TaskCounts p = planned(t, planeRows);
    if (planeRows || rowsOut) {
      // rows out differ from rows in; the commit's check of every volume's planes covers what a task holds
      return c.rows() > 0 || p.read() == q ? new CommittedOutput.TaskCounts(p.read() - q, c.rows(), c.volumes(),
          p.slabbed()) : null;
    }
    // every row its plan reads is in its files or in its side file of bad records set aside
    return c.rows() + q == p.read() ? new CommittedOutput.TaskCounts(p.read() - q, c.rows(), c.rows(), 0) : null;
  }

  /**
   * Whether a kept task's folder holds the .npy files its plan writes, by name: one per input file, or per
   * volume stored across rows (a file copied in from another task's folder has another's name).
   */
  private static boolean npyFiles(FileSystem fs, Path dir, TaskPlan t, java.util.Set<String> setAside) throws IOException {
    java.util.Set<String> want = new java.util.TreeSet<>();
    t.files().stream().filter(f -> !setAside.contains(f.path())).forEach(f -> want.add(f.relative()));
    t.volumes().forEach(v -> want.add(io.volpool.io.npy.NpyVolumeWriter.fileName(v.id(), v.record())));
    java.util.Set<String> got = new java.util.TreeSet<>();
    String base = fs.makeQualified(dir).toUri().getPath();
    org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it = fs.listFiles(dir, true);
    while (it.hasNext()) {
      String rel = it.next().getPath().toUri().getPath().substring(base.length() + 1);
      if (rel.toLowerCase(java.util.Locale.ROOT).endsWith(".npy") && !rel.startsWith("_") && !rel.startsWith(".")) {
        got.add(rel);
      }
    }
    if (!got.equals(want)) {
      LOG.warn("volpool: {} holds {} where its plan writes {}", dir, got.size() > 10 ? got.size() + " files" : got,
          want.size() > 10 ? want.size() + " files" : want);
      return false;
    }
    return true;
  }
}
