package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.job.commit.KillPoints;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The kill-point matrix of the write modes, as storage engines test their commit: a run is stopped at a named
 * point ({@link KillPoints}: planned, first task committed, half committed, job committed, each step of the
 * publish, status written) by SIGKILL or SIGTERM, for each mode (overwrite of an older output, resume, append to
 * an output) and each layout (Parquet volumes, a volume's rows, {@code .npy} per file, {@code .npy} written in
 * place); then the same command is run again (for append, two at once). Every cell must end with the output equal
 * to clean runs', row for row (duplicates counted) or file for file, with the exit code and the status file
 * agreeing and nothing of the runs left beside the output.
 *
 * <p>CI runs a covering subset (every point once, layouts and signals rotating); {@code -Dvolpool.killMatrix=full}
 * runs every cell (176; about 50 min on 2 cores), {@code full:APPEND} (or another mode) one mode's.
 */
class KillPointMatrixTest {
  enum Mode { OVERWRITE, RESUME, APPEND }

  enum Layout { PARQUET, ROWS, NPY, NPY_IN_PLACE }

  record Cell(Mode mode, Layout layout, String point, String signal) {
    @Override
    public String toString() {
      return mode + " " + layout + " " + point + ":" + signal;
    }
  }

  static List<String> points(Mode m) {
    return switch (m) {
      case OVERWRITE -> List.of(KillPoints.PLANNED, KillPoints.FIRST_TASK, KillPoints.HALF_TASKS,
          KillPoints.JOB_COMMITTED, KillPoints.MOVED_ASIDE, KillPoints.MOVED_IN, KillPoints.STATUS_WRITTEN);
      case RESUME -> List.of(KillPoints.PLANNED, KillPoints.FIRST_TASK, KillPoints.HALF_TASKS,
          KillPoints.JOB_COMMITTED, KillPoints.MOVED_IN, KillPoints.STATUS_WRITTEN);
      case APPEND -> List.of(KillPoints.PLANNED, KillPoints.FIRST_TASK, KillPoints.HALF_TASKS,
          KillPoints.JOB_COMMITTED, KillPoints.MOVED_ASIDE, KillPoints.MOVED_IN, KillPoints.MANIFEST_WRITTEN,
          KillPoints.MOVED_BACK, KillPoints.STATUS_WRITTEN);
    };
  }

  static Stream<Cell> cells() {
    List<Cell> all = new ArrayList<>();
    for (Mode m : Mode.values()) {
      for (String p : points(m)) {
        for (Layout l : Layout.values()) {
          for (String sig : List.of("KILL", "TERM")) {
            all.add(new Cell(m, l, p, sig));
          }
        }
      }
    }
    String full = System.getProperty("volpool.killMatrix", "");
    if (full.equals("full")) {
      return all.stream();
    }
    if (full.startsWith("full:")) {
      // one mode's cells (full:APPEND), to run the matrix in parts
      return all.stream().filter(c -> c.mode().name().equalsIgnoreCase(full.substring(5)));
    }
    // every point of append (the mode with most steps), the commit of overwrite and the resume of a killed run;
    // layouts and signals rotate so each appears
    List<Cell> some = new ArrayList<>();
    int k = 0;
    for (Mode m : Mode.values()) {
      for (String p : points(m)) {
        boolean take = m == Mode.APPEND || (m == Mode.OVERWRITE && (p.equals(KillPoints.MOVED_ASIDE)
            || p.equals(KillPoints.MOVED_IN))) || (m == Mode.RESUME && (p.equals(KillPoints.HALF_TASKS)
            || p.equals(KillPoints.JOB_COMMITTED)));
        if (take) {
          some.add(new Cell(m, Layout.values()[k % 4], p, k % 2 == 0 ? "KILL" : "TERM"));
          k++;
        }
      }
    }
    return some.stream();
  }

  /** Whether the commit has begun at this point (SIGTERM then waits for it: the run succeeds). */
  static boolean committing(String point) {
    return List.of(KillPoints.MOVED_ASIDE, KillPoints.MOVED_IN, KillPoints.MANIFEST_WRITTEN, KillPoints.MOVED_BACK,
        KillPoints.STATUS_WRITTEN).contains(point);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cells")
  void aKilledRunRerunEndsEqualToACleanRun(Cell c, @TempDir Path tmp) throws Exception {
    Path day1 = tmp.resolve("in/day=1");
    Path day2 = tmp.resolve("in/day=2");
    input(tmp, day1, c.layout(), "a", 4);
    // the clean result: the same runs, never stopped
    Path ref = tmp.resolve("ref/out");
    Map<String, String> refConf = conf(c, tmp.resolve("in"), ref);
    // the state before the stopped run: an output to add to, an older output to replace, or none
    Path out = tmp.resolve("run/out");
    Map<String, String> conf = conf(c, tmp.resolve("in"), out);
    if (c.mode() == Mode.APPEND) {
      assertRun(SparkTests.run(refConf), "the first append");
      assertRun(SparkTests.run(conf), "the first append");
    } else if (c.mode() == Mode.OVERWRITE) {
      Path only1 = tmp.resolve("in1");
      copyTree(day1, only1.resolve("day=1"));
      assertRun(SparkTests.run(conf(c, only1, out)), "the run before");
    }
    input(tmp, day2, c.layout(), "b", 2);
    assertRun(SparkTests.run(refConf), "the clean run");
    Object want = contents(ref, c.layout());
    ChildJvm.Child killed = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("killed.log"),
        List.of("-D" + KillPoints.PROPERTY + "=" + c.point() + ":" + c.signal()));
    int code = killed.waitFor(300);
    String log = killed.output();
    assertThat(log).as("the point was reached").contains("kill point " + c.point() + " reached");
    int expected = c.signal().equals("KILL") ? 137 : committing(c.point()) ? 0 : 143;
    assertThat(code).as(log).isEqualTo(expected);
    if (code != 137) {
      Map<?, ?> st = RunStatus.read(RunStatus.path(new org.apache.hadoop.fs.Path(out.toString())),
          new org.apache.hadoop.conf.Configuration());
      assertThat(((Number) st.get("exit_code")).intValue()).as("the status file agrees with the exit code: " + st)
          .isEqualTo(code);
    }

    // the same command again; for append two at once (one may be refused, saying so)
    if (c.mode() == Mode.APPEND) {
      ChildJvm.Child other = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("other.log"));
      SparkTests.Result r = SparkTests.run(conf);
      int o = other.waitFor(300);
      assertThat(List.of(r.code(), o)).as(r.err() + "\n---\n" + other.output()).contains(0);
      for (int x : List.of(r.code(), o)) {
        assertThat(x).as(r.err() + "\n---\n" + other.output()).isIn(0, 1);
      }
      if (r.code() == 1) {
        assertThat(r.err()).contains("another run changed").contains("rerun the same command");
      }
      if (o == 1) {
        assertThat(other.output()).contains("another run changed").contains("rerun the same command");
      }
      // whichever lost: a rerun finds nothing new or adds what is missing
      assertRun(SparkTests.run(conf), "the run after");
    } else {
      assertRun(SparkTests.run(conf), "the rerun");
    }
    assertThat(contents(out, c.layout())).as("the output against clean runs'").isEqualTo(want);
    Map<?, ?> st = RunStatus.read(RunStatus.path(new org.apache.hadoop.fs.Path(out.toString())),
        new org.apache.hadoop.conf.Configuration());
    assertThat(st.get("status")).as(String.valueOf(st)).isEqualTo("succeeded");
    assertThat(CrashTest.leftovers(out.getParent())).as("nothing of the runs beside the output; logs:\n" + log
        + (Files.exists(tmp.resolve("other.log")) ? "\n--- other:\n" + Files.readString(tmp.resolve("other.log")) : ""))
        .isEmpty();
  }

  static void assertRun(SparkTests.Result r, String what) {
    assertThat(r.code()).as(what + ": " + r.err()).isZero();
  }

  static Map<String, String> conf(Cell c, Path in, Path out) {
    Map<String, String> conf = HardeningTest.identity(in, out, "output.mode", c.mode().name().toLowerCase(
        java.util.Locale.ROOT), "device", "cpu");
    // a task per input file
    conf.put("spark.sql.files.maxPartitionBytes", "4096");
    conf.put("spark.sql.files.openCostInBytes", "4096");
    switch (c.layout()) {
      case NPY -> conf.putAll(SparkTests.conf("input.format", "npy", "output.format", "npy"));
      case NPY_IN_PLACE -> conf.putAll(SparkTests.conf("output.format", "npy"));
      default -> { }
    }
    return conf;
  }

  /** {@code n} input files of one volume each, named {@code name*}, in {@code dir}, of the layout's input. */
  static void input(Path tmp, Path dir, Layout l, String name, int n) throws Exception {
    Files.createDirectories(dir);
    for (int i = 0; i < n; i++) {
      String id = name + i;
      switch (l) {
        case PARQUET -> {
          Path flat = tmp.resolve("flat-" + id);
          HardeningTest.volumes(id).coalesce(1).write().parquet(flat.toString());
          try (var s = Files.list(flat)) {
            for (Path p : s.filter(p -> p.getFileName().toString().endsWith(".parquet")).toList()) {
              Files.copy(p, dir.resolve(id + ".parquet"));
            }
          }
        }
        case ROWS, NPY_IN_PLACE -> AppendTest.acrossRows(tmp, dir, id, id);
        case NPY -> Files.write(dir.resolve(id + ".npy"), AppendTest.concat(io.volpool.format.Npy.header(
            new long[] {1, 4, 4, 4}), NpyRangesTest.values("<f4", 64, id.hashCode())));
      }
    }
  }

  /** What an output holds: its rows (id, planes, digest of the values), sorted, duplicates kept; or its .npy files. */
  static Object contents(Path out, Layout l) throws Exception {
    if (l == Layout.NPY || l == Layout.NPY_IN_PLACE) {
      return CrashTest.npyChecksum(out);
    }
    List<String> rows = new ArrayList<>();
    var df = SparkTests.spark().read().option("recursiveFileLookup", "true").parquet(out.toString());
    if (!List.of(df.columns()).contains("d0")) {
      for (Row r : df.collectAsList()) {
        rows.add(r.getAs("id") + "|" + CrashTest.sha(r.getAs("data")));
      }
      rows.sort(null);
      return rows;
    }
    // a volume's rows, whatever their cut (runs may plan other rows): its planes in order, each plane once, duplicates
    // of a volume kept apart (a second row starting at plane 0 starts a second copy)
    Map<String, List<Row>> byId = new java.util.TreeMap<>();
    for (Row r : df.collectAsList()) {
      byId.computeIfAbsent(r.getAs("id"), k -> new ArrayList<>()).add(r);
    }
    for (var e : byId.entrySet()) {
      List<Row> parts = new ArrayList<>(e.getValue());
      parts.sort(java.util.Comparator.comparingInt((Row r) -> r.getAs("d0")));
      List<Integer> shape = parts.get(0).getList(parts.get(0).fieldIndex("shape"));
      int c = shape.get(0);
      int d = shape.get(1);
      long planeValues = (long) shape.get(2) * shape.get(3);
      byte[] first = parts.get(0).getAs("data");
      int n0 = (int) parts.get(0).getAs("d1") - (int) parts.get(0).getAs("d0");
      int plane = (int) (first.length / ((long) c * n0 * planeValues) * planeValues);
      // into [C, D, H, W]: a row holds [C, d1 - d0, H, W]
      byte[] all = new byte[c * d * plane];
      StringBuilder cut = new StringBuilder();
      int next = 0;
      for (Row r : parts) {
        int d0 = r.getAs("d0");
        int d1 = r.getAs("d1");
        cut.append(d0 == next ? "" : " gap-or-overlap@" + d0);
        next = d1;
        byte[] data = r.getAs("data");
        for (int ch = 0; ch < c && d1 <= d; ch++) {
          System.arraycopy(data, ch * (d1 - d0) * plane, all, (ch * d + d0) * plane, (d1 - d0) * plane);
        }
      }
      rows.add(e.getKey() + "|planes 0-" + next + cut + "|" + CrashTest.sha(all));
    }
    return rows;
  }

  static void copyTree(Path from, Path to) throws Exception {
    try (var s = Files.walk(from)) {
      for (Path p : s.toList()) {
        Path t = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
        } else {
          Files.copy(p, t, java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
  }
}
