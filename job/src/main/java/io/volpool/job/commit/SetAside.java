package io.volpool.job.commit;

import io.volpool.io.QuarantinedRecord;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The bad records a run set aside ({@code spark.volpool.badRecords.path}), gathered once the job has
 * committed: each task wrote the records it set aside to a side file in its own output
 * ({@link QuarantinedRecord#FOLDER}), committed with it (so a failed attempt's never count, and a
 * resumed run's kept tasks bring theirs); they are joined, in task order, into
 * {@code <path>/<run id>/bad_records.json} and taken out of the output. Counted from those files,
 * where the records were written. Immutable value.
 *
 * @param records the records set aside (lines of the side files)
 * @param files the files they came from (for .npy input, each a whole input file without output)
 * @param file where they were written; null when none were set aside
 */
public record SetAside(long records, Set<String> files, Path file) {
  /** Nothing set aside. */
  public static final SetAside NONE = new SetAside(0, Set.of(), null);

  /** The name of the file the records of one run are joined into, in their run's folder under the path. */
  public static final String FILE = "bad_records.json";

  /**
   * Refuses a bad-records path the driver cannot write, before any work: an object store volpool does not write
   * to, or a folder it cannot create or write a file in (found at the end of a long run, it would cost the run).
   */
  public static void requireWritable(String path, Configuration conf) {
    String key = io.volpool.conf.VolpoolOptions.BAD_RECORDS_PATH.key();
    try {
      OutputCommit.requireSafe(path, conf);
      Path p = new Path(path);
      FileSystem fs = io.volpool.io.Files2.fs(p, conf);
      fs.mkdirs(p);
      Path probe = new Path(p, ".volpool-write-check-" + java.util.UUID.randomUUID());
      fs.create(probe, false).close();
      fs.delete(probe, false);
    } catch (IOException | RuntimeException e) {
      if (e instanceof io.volpool.conf.SettingsException se) {
        throw se;
      }
      throw new io.volpool.conf.SettingsException(key + "=" + path + ": volpool cannot write there ("
          + String.valueOf(e.getMessage()).lines().findFirst().orElse("") + "); name a folder the driver can create and"
          + " write, on a filesystem every host shares");
    }
  }

  /** Deletes the file {@link #gather} wrote, when the run that set these records aside did not publish. */
  public void discard(Configuration conf) {
    if (file != null) {
      try {
        io.volpool.io.Files2.fs(file, conf).delete(file.getParent(), true);
      } catch (IOException | RuntimeException e) {
        org.slf4j.LoggerFactory.getLogger(SetAside.class).warn("volpool: could not remove {} of a run that did not"
            + " publish: {}", file, e.getMessage());
      }
    }
  }

  /**
   * Counts the side files under {@code dir} (a committed task's folder, or the job's committed output) without
   * moving them.
   */
  public static SetAside count(Path dir, Configuration conf) throws IOException {
    List<String> lines = lines(dir, conf);
    return new SetAside(lines.size(), files(lines), null);
  }

  /**
   * Joins the side files in {@code committed} into {@code <path>/<runId>/bad_records.json} (written beside, then
   * renamed: a reader never sees half of it), then deletes them from {@code committed}; NONE when there are none.
   */
  public static SetAside gather(Path committed, String path, String runId, Configuration conf) throws IOException {
    List<String> lines = lines(committed, conf);
    Path folder = new Path(committed, QuarantinedRecord.FOLDER);
    if (lines.isEmpty()) {
      io.volpool.io.Files2.fs(folder, conf).delete(folder, true);
      return NONE;
    }
    Path dest = new Path(new Path(path, runId), FILE);
    FileSystem fs = io.volpool.io.Files2.fs(dest, conf);
    fs.mkdirs(dest.getParent());
    Path tmp = new Path(dest.getParent(), "." + FILE + ".tmp");
    try (OutputStream os = fs.create(tmp, true)) {
      for (String l : lines) {
        os.write((l + "\n").getBytes(StandardCharsets.UTF_8));
      }
    }
    fs.delete(dest, false);
    if (!fs.rename(tmp, dest)) {
      throw new IOException("could not rename " + tmp + " to " + dest);
    }
    io.volpool.io.Files2.fs(folder, conf).delete(folder, true);
    return new SetAside(lines.size(), files(lines), fs.makeQualified(dest));
  }

  /** The lines of the side files in {@code dir}'s {@link QuarantinedRecord#FOLDER}, files in name (task) order. */
  private static List<String> lines(Path dir, Configuration conf) throws IOException {
    Path folder = new Path(dir, QuarantinedRecord.FOLDER);
    FileSystem fs = io.volpool.io.Files2.fs(folder, conf);
    List<String> lines = new ArrayList<>();
    if (!fs.exists(folder)) {
      return lines;
    }
    TreeSet<Path> sides = new TreeSet<>();
    for (FileStatus st : fs.listStatus(folder)) {
      if (st.isFile() && st.getPath().getName().endsWith(".json")) {
        sides.add(st.getPath());
      }
    }
    for (Path p : sides) {
      try (var in = fs.open(p)) {
        new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().filter(l -> !l.isBlank()).forEach(lines::add);
      }
    }
    return lines;
  }

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

  /** The distinct files the records name. */
  private static Set<String> files(List<String> lines) throws IOException {
    Set<String> files = new TreeSet<>();
    for (String l : lines) {
      String f = JSON.readTree(l).path("file").asText(null);
      if (f != null) {
        files.add(f);
      }
    }
    return files;
  }
}
