package io.volpool.job.io;

import io.volpool.io.BadRecordException;
import io.volpool.io.CorruptInputException;
import io.volpool.io.parquet.ParquetVolumeInput.RowValues;
import io.volpool.io.PlaneVolume;
import io.volpool.io.RowRules;
import io.volpool.io.parquet.TensorLayout;
import io.volpool.op.VolumeShape;
import io.volpool.spark.TaskPlan;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * Plans input whose volumes are stored across rows ({@link TensorLayout#planeRows()}): reads only
 * the small columns ({@code id}, {@code shape}, {@code d0}, {@code d1}) of every row on the driver,
 * groups rows by {@code id} (rows of one volume may lie in any order and in any files), checks that
 * each volume's rows agree on its shape and cover its planes {@code [0, D)} exactly once, and packs
 * whole volumes into tasks. A volume that breaks a rule is a {@link BadRecordException} naming it
 * and the planes; nothing runs.
 */
public final class PlaneRowPlanner {
  private PlaneRowPlanner() {}

  private static final List<String> COLUMNS = List.of(TensorLayout.ID, TensorLayout.SHAPE, TensorLayout.D0,
      TensorLayout.D1);

  private record Found(String id, VolumeShape shape, PlaneVolume.Row row, String where) {}

  public static InputPlanner.Plan plan(String input, TensorLayout layout, Configuration conf, long maxPartitionBytes,
      long openCost, int cores) throws IOException {
    return plan(input, layout, conf, maxPartitionBytes, openCost, cores, null);
  }

  /**
   * As above; with {@code pipeline} (output across rows), a volume larger than a task is spread over
   * several tasks, each running a range of its output planes ({@link #ranges}).
   */
  public static InputPlanner.Plan plan(String input, TensorLayout layout, Configuration conf, long maxPartitionBytes,
      long openCost, int cores, io.volpool.op.Pipeline pipeline) throws IOException {
    return plan(input, layout, conf, maxPartitionBytes, openCost, cores, pipeline, f -> true);
  }

  /** As above, over the input files {@code take} accepts (an appending run's new files). */
  public static InputPlanner.Plan plan(String input, TensorLayout layout, Configuration conf, long maxPartitionBytes,
      long openCost, int cores, io.volpool.op.Pipeline pipeline, java.util.function.Predicate<FileStatus> take)
      throws IOException {
    if (!layout.inputSchema().containsField(TensorLayout.ID)) {
      throw new BadRecordException(input, "rows with d0/d1 columns hold parts of volumes, and need an 'id' column saying"
          + " which volume each row belongs to");
    }
    Path root = new Path(input);
    List<String> skipped = new ArrayList<>();
    List<FileStatus> files = InputPlanner.list(root, conf, n -> true, "Parquet", skipped);
    files.removeIf(take.negate());
    InputPlanner.footers(files, conf); // every file must be Parquet: the error names the first that is not
    Map<String, List<Found>> byId = new LinkedHashMap<>();
    long rows = 0;
    long bytes = 0;
    for (int i = 0; i < files.size(); i++) {
      FileStatus f = files.get(i);
      bytes += f.getLen();
      String folder = InputPlanner.folder(root, f, conf);
      try {
        rows += SmallColumns.read(f.getPath(), folder, COLUMNS, conf, (g, rowInFile, split, k) -> {
          String where = f.getPath().getName() + " row " + rowInFile;
          String id = RowValues.id(g);
          if (id == null) {
            throw new BadRecordException(where, "id is null; every row of a volume stored across rows names its volume");
          }
          VolumeShape shape = RowRules.shape("id=" + id, RowValues.longList(g, TensorLayout.SHAPE));
          int[] planes = RowRules.planes("id=" + id + " (" + where + ")", shape, RowValues.integer(g, TensorLayout.D0),
              RowValues.integer(g, TensorLayout.D1));
          byId.computeIfAbsent(id, x -> new ArrayList<>())
              .add(new Found(id, shape, new PlaneVolume.Row(split, k, planes[0], planes[1]), where));
        });
      } catch (IOException | RuntimeException e) {
        if (e instanceof BadRecordException || e instanceof CorruptInputException) {
          throw e;
        }
        throw new CorruptInputException(f.getPath() + ": reading its id, shape, d0 and d1 columns failed: " + e.getMessage());
      }
    }
    List<PlaneVolume> volumes = new ArrayList<>();
    for (List<Found> parts : byId.values()) {
      volumes.add(volume(parts));
    }
    long total = volumes.stream().mapToLong(PlaneVolume::bytes).sum();
    long max = InputPlanner.maxSplitBytes(maxPartitionBytes, openCost, total, volumes.size(), cores);
    List<PlaneVolume> entries = new ArrayList<>();
    for (PlaneVolume v : volumes) {
      entries.addAll(pipeline != null && v.bytes() > max ? ranges(v, pipeline, max) : List.of(v));
    }
    List<TaskPlan> tasks = new ArrayList<>();
    List<PlaneVolume> cur = new ArrayList<>();
    long curBytes = 0;
    for (PlaneVolume v : entries) {
      if (!cur.isEmpty() && curBytes + v.bytes() > max) {
        tasks.add(new TaskPlan(tasks.size(), List.of(), List.of(), List.copyOf(cur), curBytes));
        cur.clear();
        curBytes = 0;
      }
      cur.add(v);
      curBytes += v.bytes();
    }
    if (!cur.isEmpty()) {
      tasks.add(new TaskPlan(tasks.size(), List.of(), List.of(), List.copyOf(cur), curBytes));
    }
    return new InputPlanner.Plan(tasks, files.size(), bytes, rows, skipped, files.isEmpty() ? null : files.get(0).getPath(),
        volumes.size());
  }

  /**
   * Volume {@code v} as ranges of its output planes, each reading about {@code taskBytes} of input
   * (ranges of multiples of {@link io.volpool.backend.SlabRanges#ALIGN} planes, so that every range's slabs
   * are slabs of a whole run and the output is bit for bit a single task's). Each range lists the rows
   * its input window (its halo included) reads; rows between two windows, which no output reads, go to
   * the range before them, so every row is read, and each row is counted by the first range that lists it.
   * A shape the pipeline cannot take stays whole (its task reports the bad record).
   */
  public static List<PlaneVolume> ranges(PlaneVolume v, io.volpool.op.Pipeline pipeline, long taskBytes) {
    io.volpool.op.SlabPlan sp;
    try {
      sp = new io.volpool.op.SlabPlan(pipeline, v.shape());
    } catch (IllegalArgumentException e) {
      return List.of(v);
    }
    int[][] r = io.volpool.backend.SlabRanges.forTasks(sp.output().d(), v.bytes(), taskBytes);
    if (r.length < 2) {
      return List.of(v);
    }
    List<PlaneVolume> out = new ArrayList<>();
    int owned = 0;
    for (int k = 0; k < r.length; k++) {
      int lo = k == 0 ? 0 : sp.inputPlanes(r[k][0], r[k][1])[0];
      int hi = k == r.length - 1 ? v.shape().d()
          : Math.max(sp.inputPlanes(r[k][0], r[k][1])[1], sp.inputPlanes(r[k + 1][0], r[k + 1][1])[0]);
      out.add(v.range(r[k][0], r[k][1], lo, hi, owned));
      owned = hi;
    }
    return out;
  }

  /**
   * Refuses input whose volumes are to be written across rows but whose ids are missing, null or
   * repeated: a reader finds a volume's rows by id, so two volumes with one id would read as one
   * volume with its planes twice. Reads only the {@code id} column, on the driver, before anything runs.
   *
   * @throws SettingsException when the input has no {@code id} column
   * @throws BadRecordException naming the id and both rows
   */
  public static void requireUniqueIds(String input, TensorLayout layout, Configuration conf) throws IOException {
    String why = "with output across rows (" + io.volpool.conf.VolpoolOptions.OUTPUT_LAYOUT.key() + "=rows) a"
        + " reader finds each volume's rows by its id";
    if (!layout.hasId()) {
      return; // each volume's id is its path[row]: unique
    }
    Path root = new Path(input);
    List<FileStatus> files = InputPlanner.list(root, conf, n -> true, "Parquet", new ArrayList<>());
    Map<String, String> seen = new java.util.HashMap<>();
    for (FileStatus f : files) {
      SmallColumns.read(f.getPath(), "", List.of(TensorLayout.ID), conf, (g, rowInFile, split, k) -> {
        String where = f.getPath().getName() + " row " + rowInFile;
        String id = RowValues.id(g);
        if (id == null) {
          throw new BadRecordException(where, "id is null; " + why);
        }
        String before = seen.putIfAbsent(id, where);
        if (before != null) {
          throw new BadRecordException("id=" + id, "two input rows have this id (" + before + " and " + where + "); " + why
              + ", so two volumes with one id would read back as one. Give each volume its own id");
        }
      });
    }
  }

  /** One volume from its rows: one shape, planes {@code [0, D)} each exactly once. */
  static PlaneVolume volume(List<Found> parts) {
    String id = parts.get(0).id();
    String rec = "id=" + id;
    VolumeShape shape = parts.get(0).shape();
    for (Found p : parts) {
      if (!p.shape().equals(shape)) {
        throw new BadRecordException(rec, "its rows disagree on the volume's shape: " + shape + " in "
            + parts.get(0).where() + " but " + p.shape() + " in " + p.where());
      }
    }
    List<Found> sorted = new ArrayList<>(parts);
    sorted.sort(Comparator.comparingInt((Found p) -> p.row().d0()).thenComparingInt(p -> p.row().d1()));
    int next = 0;
    Found last = null;
    for (Found p : sorted) {
      int d0 = p.row().d0();
      if (d0 > next) {
        throw new BadRecordException(rec, "planes [" + next + ", " + d0 + ") of its D = " + shape.d() + " are in no row"
            + " (rows hold " + ranges(sorted) + ")");
      }
      if (d0 < next) {
        throw new BadRecordException(rec, "planes [" + d0 + ", " + Math.min(next, p.row().d1()) + ") are in two rows ("
            + last.where() + " and " + p.where() + "; rows hold " + ranges(sorted) + ")");
      }
      next = p.row().d1();
      last = p;
    }
    if (next != shape.d()) {
      throw new BadRecordException(rec, "planes [" + next + ", " + shape.d() + ") of its D = " + shape.d() + " are in no"
          + " row (rows hold " + ranges(sorted) + ")");
    }
    return new PlaneVolume(id, shape, sorted.stream().map(Found::row).toList());
  }

  private static String ranges(List<Found> sorted) {
    List<String> r = new ArrayList<>();
    for (Found p : sorted.subList(0, Math.min(20, sorted.size()))) {
      r.add("[" + p.row().d0() + ", " + p.row().d1() + ")");
    }
    return String.join(" ", r) + (sorted.size() > 20 ? " ..." : "");
  }
}
