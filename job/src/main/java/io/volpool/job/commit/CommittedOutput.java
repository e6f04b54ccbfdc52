package io.volpool.job.commit;

import io.volpool.format.NpyHeader;
import io.volpool.job.io.InputPlanner;
import io.volpool.job.io.SmallColumns;
import io.volpool.spark.JobMetrics;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;

/**
 * What the job commit actually left in the staging folder, counted on the driver from the files
 * themselves (Parquet footers' row counts; .npy headers' volume counts), and the check that it is
 * what was read: a run that committed less than it read fails instead of reporting a success.
 *
 * @param files data files committed
 * @param rows Parquet rows they hold (.npy: volumes)
 * @param volumes volumes they hold: for output across rows, the distinct ids that have a row starting at plane 0
 * @param repeatedStart for output across rows, an id with more than one row starting at plane 0 (null if none)
 * @param planeProblem for output across rows (or .npy written in place), a volume whose rows (ranges) do not hold its
 *     output planes exactly once (a range of planes missing or written twice, named with the planes), or a .npy
 *     file whose size is not what its header says; null if every volume's are whole
 */
public record CommittedOutput(long files, long rows, long volumes, String repeatedStart, String planeProblem) {
  public CommittedOutput(long files, long rows, long volumes, String repeatedStart) {
    this(files, rows, volumes, repeatedStart, null);
  }

  /**
   * What is here beyond {@code before}: an appending run's files on S3, committed into the output that held
   * {@code before} (the plane and id checks are the whole output's).
   */
  public CommittedOutput minus(CommittedOutput before) {
    return new CommittedOutput(files - before.files, rows - before.rows, volumes - before.volumes, repeatedStart,
        planeProblem);
  }

  /** Counts the committed data files under {@code staging}; {@code rowsOut}: output across rows (d0/d1 columns). */
  public static CommittedOutput count(Path staging, boolean npy, boolean rowsOut, Configuration conf) throws IOException {
    FileSystem fs = io.volpool.io.Files2.fs(staging, conf);
    if (!fs.exists(staging)) {
      return new CommittedOutput(0, 0, 0, null);
    }
    List<String> skipped = new ArrayList<>();
    List<FileStatus> files = InputPlanner.list(staging, conf, n -> !npy || n.toLowerCase(java.util.Locale.ROOT)
        .endsWith(".npy"), npy ? ".npy" : "Parquet", skipped);
    long volumes = 0;
    java.util.Set<String> started = new java.util.HashSet<>();
    java.util.Map<String, java.util.List<long[]>> planes = new java.util.HashMap<>();
    String[] repeated = {null};
    String sizeProblem = null;
    // volumes written in place by ranges of planes: each volume of each such file has its planes once (said before a
    // file short of its last planes is found unreadable)
    String tiles = npy ? io.volpool.io.npy.NpyPlanesInPlace.Marker.tiles(io.volpool.io.npy.NpyPlanesInPlace.Marker.read(
        fs, staging)) : null;
    if (tiles != null) {
      return new CommittedOutput(files.size(), 0, 0, null, tiles);
    }
    for (FileStatus f : files) {
      if (npy) {
        try (FSDataInputStream in = fs.open(f.getPath())) {
          byte[] prefix = new byte[NpyHeader.prefixBytes(f.getLen(), NpyHeader.DEFAULT_MAX_HEADER_BYTES)];
          in.readFully(prefix);
          NpyHeader h = NpyHeader.parseHeader(prefix, f.getLen(), f.getPath().toString(),
              NpyHeader.DEFAULT_MAX_HEADER_BYTES);
          long[] s = h.shape();
          volumes += s.length == 5 ? s[0] : 1;
          long want = h.dataOffset() + h.numel() * h.itemSize();
          if (f.getLen() != want && sizeProblem == null) {
            // a file written in place whose last planes never reached the disk, or one cut short
            sizeProblem = "the committed output " + f.getPath().getName() + " holds " + f.getLen() + " bytes where its"
                + " header says " + want;
          }
        }
      } else if (rowsOut) {
        // a volume across rows is its id's row that starts at plane 0: counted from the rows a reader will find;
        // and every volume's rows must hold its output planes exactly once (ranges written by separate tasks)
        volumes += SmallColumns.read(f.getPath(), "", java.util.List.of(io.volpool.io.parquet.TensorLayout.ID,
            io.volpool.io.parquet.TensorLayout.SHAPE, io.volpool.io.parquet.TensorLayout.D0,
            io.volpool.io.parquet.TensorLayout.D1), conf, (g, row, split, k) -> {
              Long d0 = io.volpool.io.parquet.ParquetVolumeInput.RowValues.integer(g, io.volpool.io.parquet.TensorLayout.D0);
              Long d1 = io.volpool.io.parquet.ParquetVolumeInput.RowValues.integer(g, io.volpool.io.parquet.TensorLayout.D1);
              String id = String.valueOf(io.volpool.io.parquet.ParquetVolumeInput.RowValues.id(g));
              if (d0 != null && d0 == 0 && !started.add(id) && repeated[0] == null) {
                repeated[0] = id;
              }
              java.util.List<Long> shape = io.volpool.io.parquet.ParquetVolumeInput.RowValues.longList(g,
                  io.volpool.io.parquet.TensorLayout.SHAPE);
              if (d0 != null && d1 != null && shape != null && shape.size() == 4) {
                planes.computeIfAbsent(id, x -> new java.util.ArrayList<>()).add(new long[] {d0, d1, shape.get(1)});
              }
            });
      } else {
        try (ParquetFileReader r = io.volpool.io.Files2.openParquet(f.getPath(), conf)) {
          for (BlockMetaData b : r.getFooter().getBlocks()) {
            volumes += b.getRowCount();
          }
        }
      }
    }
    if (npy) {
      return new CommittedOutput(files.size(), volumes, volumes, null, sizeProblem);
    }
    return rowsOut ? new CommittedOutput(files.size(), volumes, started.size(), repeated[0], planeProblem(planes))
        : new CommittedOutput(files.size(), volumes, volumes, null);
  }

  /**
   * The first volume (by id) whose output rows' planes {@code {d0, d1, D}} do not tile {@code [0, D)}
   * exactly once, said with the planes missing or doubled; null when every volume's do.
   */
  static String planeProblem(java.util.Map<String, java.util.List<long[]>> planes) {
    for (String id : new java.util.TreeSet<>(planes.keySet())) {
      java.util.List<long[]> rows = planes.get(id);
      String problem = io.volpool.backend.SlabRanges.tilingProblem(rows, rows.get(0)[2]);
      if (problem != null) {
        return "the committed output of id=" + id + " " + problem;
      }
    }
    return null;
  }


  /**
   * What tasks did, as their counts say: volumes (rows, for volumes across rows) read, volumes written,
   * output rows starting at plane 0, volumes (or ranges of one) run in slabs, and bad records set aside
   * ({@code spark.volpool.badRecords.path}: rows, or whole .npy files; not counted as read).
   */
  public record TaskCounts(long read, long written, long starts, long slabbed, long quarantined) {
    public TaskCounts(long read, long written, long starts, long slabbed) {
      this(read, written, starts, slabbed, 0);
    }

    /** The counts this run's tasks sent with their accumulators. */
    public static TaskCounts of(JobMetrics m) {
      return new TaskCounts(m.volumesRead().value(), m.volumesWritten().value(), m.volumeStarts().value(),
          m.slabbedVolumes().value(), m.quarantined().value());
    }

    public TaskCounts plus(TaskCounts o) {
      return new TaskCounts(read + o.read, written + o.written, starts + o.starts, slabbed + o.slabbed,
          quarantined + o.quarantined);
    }
  }

  /**
   * Fails when the committed output does not hold every volume that was read, or the readers did not
   * read every volume the input holds, naming the numbers and where they differ.
   *
   * @throws OutputMismatchException with the counts and the likely cause
   */
  public static void check(CommittedOutput c, InputPlanner.Plan plan, JobMetrics m, boolean npyIn, boolean npyOut,
      boolean rowsOut, String output) {
    check(c, plan, TaskCounts.of(m), SetAside.NONE, npyIn, npyOut, rowsOut, output);
  }

  /**
   * The same against {@code counts}: this run's tasks', and, for a resumed run, those of the tasks it kept
   * (counted from their committed files and their plan).
   */
  public static void check(CommittedOutput c, InputPlanner.Plan plan, TaskCounts counts, boolean npyIn, boolean npyOut,
      boolean rowsOut, String output) {
    check(c, plan, counts, SetAside.NONE, npyIn, npyOut, rowsOut, output);
  }

  /** The same, with the bad records the tasks set aside ({@code bad}, gathered from their committed side files). */
  public static void check(CommittedOutput c, InputPlanner.Plan plan, TaskCounts counts, SetAside bad, boolean npyIn,
      boolean npyOut, boolean rowsOut, String output) {
    long read = counts.read();
    long written = counts.written();
    List<String> problems = new ArrayList<>();
    String unit = plan.volumes() >= 0 ? "rows" : "volumes";
    if (bad.records() != counts.quarantined()) {
      problems.add("the tasks set aside " + counts.quarantined() + " bad records but their committed side files hold "
          + bad.records());
    }
    if (!npyIn && plan.rows() != read + counts.quarantined()) {
      problems.add("the input footers hold " + plan.rows() + " " + unit + " but the tasks read " + read
          + (counts.quarantined() > 0 ? " and set aside " + counts.quarantined() : ""));
    }
    if (plan.volumes() >= 0) {
      // volumes stored across rows: rows in and rows out differ; every volume (or range of one) must have gone through
      long done = counts.slabbed();
      long entries = plan.tasks().stream().mapToLong(t -> t.volumes().size()).sum();
      if (done != entries) {
        problems.add("the input holds " + plan.volumes() + " volumes stored across rows" + (entries != plan.volumes()
            ? " (planned as " + entries + " ranges of planes)" : "") + " but the tasks finished " + done);
      }
    }
    if (c.planeProblem() != null) {
      problems.add(c.planeProblem());
    }
    if (rowsOut) {
      // output across rows: each volume written has exactly one row starting at plane 0
      long want = plan.volumes() >= 0 ? plan.volumes() : read;
      long started = counts.starts();
      if (started != want) {
        problems.add("the tasks read " + want + " volumes but the output rows start " + started);
      }
    } else if (plan.volumes() >= 0) {
      // volumes stored across rows written as one .npy each
      if (written != plan.volumes()) {
        problems.add("the input holds " + plan.volumes() + " volumes stored across rows but the tasks wrote " + written);
      }
    } else if (written != read) {
      problems.add("the tasks read " + read + " volumes but wrote " + written);
    }
    if (c.rows() != written) {
      problems.add("the tasks wrote " + written + " rows but the committed output holds " + c.rows() + " in "
          + c.files() + " file(s)");
    }
    if (rowsOut) {
      long want = plan.volumes() >= 0 ? plan.volumes() : read;
      if (c.repeatedStart() != null) {
        problems.add("the committed output holds two volumes with id=" + c.repeatedStart() + " (two rows start at plane"
            + " 0); a reader would take them for one");
      }
      if (c.volumes() != want) {
        problems.add("the tasks read " + want + " volumes but the committed output holds " + c.volumes()
            + " distinct volumes");
      }
    }
    if (npyIn && npyOut && c.files() + bad.files().size() != plan.files()) {
      problems.add("the input has " + plan.files() + " .npy files but the committed output has " + c.files()
          + (bad.files().isEmpty() ? "" : " and " + bad.files().size() + " were set aside as bad records"));
    }
    if (!problems.isEmpty()) {
      String hint = c.rows() < written
          ? ". Files written by the executors did not reach the output: on a cluster, is " + output
              + " on a filesystem every executor and the driver share?"
          : "";
      throw new OutputMismatchException("output check failed: " + String.join("; ", problems) + hint
          + ". Nothing was moved into " + output + ".");
    }
  }
}
