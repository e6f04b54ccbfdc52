package io.volpool.job.io;

import io.volpool.io.BadRecordException;
import io.volpool.io.PlaneVolume;
import io.volpool.io.parquet.ParquetVolumeInput.RowValues;
import io.volpool.io.parquet.TensorLayout;
import io.volpool.spark.TaskPlan;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;

/**
 * The output's id rule under append: an appending run never publishes a volume whose id the output holds
 * already (a renamed input file, a new file holding another copy of a volume stored across rows), since a
 * reader finds a volume by its id and would read two as one. Checked on the driver before any task runs,
 * reading only the {@code id} columns (of the new input files and of the output's files); the commit then
 * refuses an output another run changed since ({@code OutputCommit.checkAppendBase}), so the check holds
 * at the commit.
 */
public final class OutputIds {
  private OutputIds() {}

  /** The ids of the volumes in the input files {@code take} accepts (Parquet with an {@code id} column), each with where it is. */
  public static Map<String, String> ofInput(List<FileStatus> listed, Predicate<FileStatus> take, Configuration conf)
      throws IOException {
    Map<String, String> ids = new LinkedHashMap<>();
    for (FileStatus f : listed) {
      if (!take.test(f)) {
        continue;
      }
      SmallColumns.read(f.getPath(), "", List.of(TensorLayout.ID), conf, (g, rowInFile, split, k) -> {
        String id = RowValues.id(g);
        if (id != null) {
          ids.putIfAbsent(id, f.getPath() + " row " + rowInFile);
        }
      });
    }
    return ids;
  }

  /** The ids of the volumes stored across rows that {@code plan} reads, each with the file of its first row. */
  public static Map<String, String> ofPlan(InputPlanner.Plan plan) {
    Map<String, String> ids = new LinkedHashMap<>();
    for (TaskPlan t : plan.tasks()) {
      for (PlaneVolume v : t.volumes()) {
        ids.putIfAbsent(v.id(), v.firstRow().split().path() + " row " + v.firstRow().row());
      }
    }
    return ids;
  }

  /**
   * Refuses new volumes whose id output {@code out} holds: in the {@code id} column of its Parquet files or,
   * for .npy output ({@code npyOut}), as a file {@code <id>.npy}; {@code had} is the output's manifest.
   *
   * @throws BadRecordException naming the id, the output file that holds it and the input that holds it again
   */
  public static void requireNew(Path out, boolean npyOut, Map<String, String> ids, Configuration conf,
      io.volpool.job.commit.RunManifest had) throws IOException {
    if (ids.isEmpty()) {
      return;
    }
    FileSystem fs = io.volpool.io.Files2.fs(out, conf);
    String base = fs.makeQualified(out).toUri().getPath();
    Map<String, String> byName = new java.util.HashMap<>();
    if (npyOut) {
      ids.keySet().forEach(id -> byName.put(io.volpool.io.npy.NpyVolumeWriter.fileName(id, "id=" + id), id));
    }
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(out, true);
    while (it.hasNext()) {
      Path f = it.next().getPath();
      String rel = f.toUri().getPath().substring(base.length() + 1);
      if (rel.startsWith("_") || rel.startsWith(".") || rel.contains("/_") || rel.contains("/.")) {
        continue;
      }
      if (npyOut) {
        String id = byName.get(rel);
        if (id != null) {
          throw clash(id, rel, ids.get(id));
        }
        continue;
      }
      if (!rel.endsWith(".parquet") || io.volpool.job.commit.Appending.unfinished(had, f.getName())) {
        continue; // not data, or a part of an append that did not finish (removed at this run's commit)
      }
      SmallColumns.read(f, "", List.of(TensorLayout.ID), conf, (g, rowInFile, split, k) -> {
        if (g.getType().containsField(TensorLayout.ID)) {
          String id = RowValues.id(g);
          if (id != null && ids.containsKey(id)) {
            throw clash(id, rel + " row " + rowInFile, ids.get(id));
          }
        }
      });
    }
  }

  private static BadRecordException clash(String id, String inOutput, String inInput) {
    return new BadRecordException("id=" + id, "the output holds this volume already (" + inOutput + ") and the new input"
        + " holds it again (" + inInput + "); an append adds volumes, never a second copy of one, since a reader finds a"
        + " volume by its id. Move that file out of the input (a renamed or copied file is new to the manifest), give the"
        + " volume a new id, or set " + io.volpool.conf.VolpoolOptions.MODE.key() + "=overwrite to make the output again");
  }
}
