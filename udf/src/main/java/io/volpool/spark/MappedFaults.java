package io.volpool.spark;

import io.volpool.io.CorruptInputException;
import io.volpool.io.npy.NpyFileRef;
import io.volpool.io.parquet.ParquetSplit;
import io.volpool.io.PlaneVolume;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A fault on a mapped file, said as what caused it. The JVM turns a SIGBUS on a mapping (the mapped
 * input file was truncated; a scratch file in {@code spark.local.dir} could not get a block on a
 * full disk) into an {@link InternalError}, which Spark's executor takes for fatal and exits the JVM
 * with code 50; a write() from such a mapping fails with "Bad address". The task instead fails with
 * the file that changed (a bad input, exit 3) or the local directories and their free space.
 */
final class MappedFaults {
  private MappedFaults() {}

  /** Whether {@code t} is such a fault. */
  static boolean isMappedFault(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      String m = String.valueOf(c.getMessage());
      if ((c instanceof InternalError && m.contains("unsafe memory access"))
          || (c instanceof java.io.IOException && m.contains("Bad address"))) {
        return true;
      }
    }
    return false;
  }

  /** The error to fail the task with, for the fault {@code t} of a task reading {@code plan}. */
  static RuntimeException explain(Throwable t, TaskPlan plan, Configuration conf, File[] localDirs) {
    for (String changed : plan == null ? List.<String>of() : changedInputs(plan, conf)) {
      CorruptInputException e = new CorruptInputException(changed + ": the input file changed while the job read it"
          + " (a mapped page of it is gone: the file was truncated or replaced); an input must stay as it is while a job"
          + " reads it. Rerun once it is complete");
      e.initCause(t);
      return e;
    }
    StringBuilder dirs = new StringBuilder();
    for (File d : localDirs == null ? new File[0] : localDirs) {
      dirs.append(dirs.length() == 0 ? "" : ", ").append(d).append(" (").append(d.getUsableSpace() >> 20)
          .append(" MiB free)");
    }
    return new IllegalStateException("a scratch file of this task in the executor's local directories could not be"
        + " written (" + t.getMessage() + "): spark.local.dir " + (dirs.length() == 0 ? "(unknown)" : dirs)
        + " is most likely full; give it room or point spark.local.dir at a larger disk", t);
  }

  /** The task's input files that are now shorter than the job planned them, or gone. */
  static List<String> changedInputs(TaskPlan plan, Configuration conf) {
    List<String> out = new ArrayList<>();
    for (NpyFileRef f : plan.files()) {
      check(f.path(), f.length(), true, conf, out);
    }
    plan.ranges().stream().map(io.volpool.io.npy.NpyRange::file).distinct()
        .forEach(f -> check(f.path(), f.length(), true, conf, out));
    for (ParquetSplit s : plan.splits()) {
      check(s.path(), s.start() + s.length(), false, conf, out);
    }
    for (PlaneVolume v : plan.volumes()) {
      for (PlaneVolume.Row r : v.rows()) {
        check(r.split().path(), r.split().start() + r.split().length(), false, conf, out);
      }
    }
    return out;
  }

  private static void check(String path, long length, boolean exact, Configuration conf, List<String> out) {
    if (out.contains(path)) {
      return;
    }
    try {
      Path p = new Path(path);
      FileSystem fs = p.getFileSystem(conf);
      long now = fs.getFileStatus(p).getLen();
      if (exact ? now != length : now < length) {
        out.add(path + " (" + length + " bytes when listed, " + now + " now)");
      }
    } catch (java.io.FileNotFoundException e) {
      out.add(path + " (gone)");
    } catch (java.io.IOException e) {
      // not known to have changed
    }
  }
}
