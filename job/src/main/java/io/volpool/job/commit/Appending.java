package io.volpool.job.commit;

import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an appending run ({@code spark.volpool.output.mode=append}) adds to an output: the input files its
 * manifest does not list. The output must have been made with the same settings (its manifest says), and
 * a file it lists must be unchanged (same size and modification time): a changed file is refused, naming
 * it, since its old results are in the output and volpool does not replace part of an output. Files the
 * input no longer holds are left in the output. Immutable.
 *
 * @param existing the output's manifest; null when there is no output yet (the run makes it)
 * @param added the input files to process, by path relative to the input
 * @param known input files the output holds already
 * @param gone files the output's manifest lists that the input no longer holds
 */
public record Appending(RunManifest existing, Set<String> added, int known, int gone) {
  private static final Logger LOG = LoggerFactory.getLogger(Appending.class);

  /** Nothing to add: every input file is in the output already. */
  public boolean nothingNew() {
    return existing != null && added.isEmpty();
  }

  /** The manifest the output holds once this run's results are in: the existing one's files and these. */
  public RunManifest after(RunManifest run, String runId) {
    if (existing == null) {
      return run.withRun(runId);
    }
    List<RunManifest.InputFile> more = new ArrayList<>();
    for (RunManifest.InputFile f : run.files()) {
      if (added.contains(f.path())) {
        more.add(f);
      }
    }
    return existing.withPlanning(run.planning()).plus(more, runId);
  }

  /** The summary's account of an appending run. */
  public Map<String, Object> describe() {
    Map<String, Object> m = new java.util.LinkedHashMap<>();
    m.put("input_files_new", (long) added.size());
    m.put("input_files_known", (long) known);
    m.put("input_files_gone", (long) gone);
    return m;
  }

  /**
   * Compares the input ({@code run}'s files) with what output {@code out} holds. (What an append that did not
   * finish left in the output is removed under the output's lock at the commit, {@code OutputCommit#checkAppendBase},
   * never here: a concurrent append may be committing right now.)
   *
   * @throws SettingsException when the output has no manifest, was made with other settings or would get other
   *     columns, or an input file it lists has changed, each naming what differs
   */
  public static Appending check(FileSystem fs, Path out, RunManifest run) throws IOException {
    if (!OutputCommit.exists(fs, out)) {
      return new Appending(null, names(run.files()), 0, 0);
    }
    RunManifest had = RunManifest.read(fs, out);
    if (had == null) {
      throw new SettingsException(VolpoolOptions.MODE.key() + "=append: output " + out + " has no " + RunManifest.FILE
          + ", so which input it holds is unknown (it was written by another tool, or by a volpool before 0.2); set "
          + VolpoolOptions.MODE.key() + "=overwrite to make it again from all the input");
    }
    List<String> settings = run.settingDifferences(had);
    // the output's columns are compared column by column below
    settings.removeIf(d -> d.startsWith(RunManifest.OUTPUT_SCHEMA + " "));
    if (!settings.isEmpty()) {
      throw new SettingsException(VolpoolOptions.MODE.key() + "=append: output " + out + " was made with other settings,"
          + " so results added now would not match it: " + String.join("; ", settings) + ". Use the output's settings, or"
          + " set " + VolpoolOptions.MODE.key() + "=overwrite to make it again with these");
    }
    requireSameColumns(fs, out, had, run);
    Map<String, RunManifest.InputFile> processed = new TreeMap<>();
    had.files().forEach(f -> processed.put(f.path(), f));
    Set<String> added = new java.util.TreeSet<>();
    int known = 0;
    List<String> changed = new ArrayList<>();
    for (RunManifest.InputFile f : run.files()) {
      RunManifest.InputFile h = processed.get(f.path());
      if (h == null) {
        added.add(f.path());
      } else if (h.size() != f.size() || h.modified() != f.modified()) {
        changed.add(f.path() + " (" + h.size() + " bytes modified " + java.time.Instant.ofEpochMilli(h.modified())
            + " when processed; now " + f.size() + " bytes modified " + java.time.Instant.ofEpochMilli(f.modified()) + ")");
      } else {
        known++;
      }
    }
    if (!changed.isEmpty()) {
      throw new SettingsException(VolpoolOptions.MODE.key() + "=append: " + changed.size() + " input file(s) changed since"
          + " their results went into " + out + ": " + String.join("; ", changed.subList(0, Math.min(5, changed.size())))
          + (changed.size() > 5 ? "; ..." : "") + ". The output holds the old files' results and an append adds, never"
          + " replaces: restore the files, move changed data to new files, or set " + VolpoolOptions.MODE.key()
          + "=overwrite to make the output again from all the input");
    }
    int gone = processed.size() - known - changed.size();
    if (gone > 0) {
      LOG.info("volpool: {} file(s) processed into {} are no longer in the input; their results stay", gone, out);
    }
    return new Appending(had, added, known, gone);
  }

  /**
   * Refuses an append whose input would write other columns than the output holds (a new file whose
   * {@code site} is a string where the output's is int64): the output's schema from its manifest, or, for an
   * output made before manifests kept it, from one of its data files.
   */
  private static void requireSameColumns(FileSystem fs, Path out, RunManifest had, RunManifest run) throws IOException {
    String now = run.settings().get(RunManifest.OUTPUT_SCHEMA);
    if (now == null) {
      return;
    }
    String then = had.settings().get(RunManifest.OUTPUT_SCHEMA);
    org.apache.parquet.schema.MessageType have = then != null
        ? org.apache.parquet.schema.MessageTypeParser.parseMessageType(then) : dataFileSchema(fs, out, had);
    if (have == null) {
      return; // .npy output, or no data file: nothing has columns
    }
    List<String> diff = io.volpool.io.parquet.TensorLayout.schemaDifferences(
        org.apache.parquet.schema.MessageTypeParser.parseMessageType(now), have, "the output");
    if (!diff.isEmpty()) {
      throw new SettingsException(VolpoolOptions.MODE.key() + "=append: this input's volumes would be written with"
          + " other columns than " + out + " holds: " + String.join("; ", diff) + " (the input's columns are those of"
          + " its first file, " + run.files().get(0).path() + "). An output holds one schema: give the new files the"
          + " output's columns, or set " + VolpoolOptions.MODE.key() + "=overwrite to make the output again");
    }
  }

  /** The schema of one Parquet data file of {@code out} (not a hidden or marker file); null when it has none. */
  private static org.apache.parquet.schema.MessageType dataFileSchema(FileSystem fs, Path out, RunManifest had)
      throws IOException {
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(out, true);
    while (it.hasNext()) {
      Path f = it.next().getPath();
      String n = f.getName();
      if (n.endsWith(".parquet") && !n.startsWith("_") && !n.startsWith(".") && !unfinished(had, n)) {
        try (org.apache.parquet.hadoop.ParquetFileReader r = io.volpool.io.Files2.openParquet(f, fs.getConf())) {
          return r.getFooter().getFileMetaData().getSchema();
        }
      }
    }
    return null;
  }

  private static Set<String> names(List<RunManifest.InputFile> files) {
    Set<String> s = new java.util.TreeSet<>();
    files.forEach(f -> s.add(f.path()));
    return s;
  }

  /** The prefix of the data files appending run {@code id} writes ({@code part-<first 8 of id>-r-00000.parquet}). */
  public static String partPrefix(String id) {
    return "part-" + id.substring(0, Math.min(8, id.length()));
  }

  private static final java.util.regex.Pattern RUN_PART = java.util.regex.Pattern.compile("(part-[0-9a-f]{8})-r-\\d+.*");

  /**
   * Whether data file {@code name} of the output is a part of an appending run that manifest {@code had} does not
   * name (one that died in its commit, under an older version): not the output's, and removed at the next commit.
   */
  public static boolean unfinished(RunManifest had, String name) {
    java.util.regex.Matcher m = RUN_PART.matcher(name);
    return had != null && m.matches() && had.runs().stream().noneMatch(r -> partPrefix(r).equals(m.group(1)));
  }

  /**
   * Removes what an appending run that died in its commit left in the output: Parquet parts of a run
   * the manifest does not name ({@link #partPrefix}), and .npy files of the input files this run adds
   * ({@code added}: the manifest does not list them, so only a run that did not finish can have put them
   * there). Any other file is left alone: a .npy a user put in the output is not the job's to remove.
   */
  static void removeUnfinished(FileSystem fs, Path out, RunManifest had, Set<String> added) throws IOException {
    Set<String> inputs = names(had.files());
    String base = fs.makeQualified(out).toUri().getPath();
    List<Path> orphans = new ArrayList<>();
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(out, true);
    while (it.hasNext()) {
      FileStatus f = it.next();
      String n = f.getPath().getName();
      String rel = f.getPath().toUri().getPath().substring(base.length() + 1);
      if (rel.startsWith("_") || rel.startsWith(".") || rel.contains("/_") || rel.contains("/.")) {
        continue;
      }
      if (unfinished(had, n)) {
        orphans.add(f.getPath());
      } else if (n.toLowerCase(java.util.Locale.ROOT).endsWith(".npy") && !inputs.contains(rel) && added.contains(rel)
          && !inputs.isEmpty() && inputs.iterator().next().toLowerCase(java.util.Locale.ROOT).endsWith(".npy")) {
        orphans.add(f.getPath());
      }
    }
    for (Path p : orphans) {
      fs.delete(p, false);
    }
    if (!orphans.isEmpty()) {
      LOG.warn("volpool: removed {} file(s) from {} that an appending run which did not finish had put there (first: {})",
          orphans.size(), out, orphans.get(0));
    }
  }
}
