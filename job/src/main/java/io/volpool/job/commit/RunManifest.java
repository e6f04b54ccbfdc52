package io.volpool.job.commit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * What an output was made from ({@value #FILE}, in a run's staging folder from its start and in the
 * output once committed): the settings that decide the results (pipeline with every parameter, model
 * SHA-256, output format, dtype and layout, ...) and the input files the runs processed, each with its
 * size and modification time. A resumed run keeps an earlier run's work only when both are the same
 * ({@link #fingerprint}); an appending run processes the input files the output's manifest does not
 * list. Immutable.
 *
 * @param settings what decides the results, by name, in a stable order
 * @param files the input files, by path relative to the input, sorted
 * @param runs the ids of the runs whose results the output holds, oldest first
 * @param planning how the run cut its input into tasks (not part of the fingerprint: a resumed run plans
 *     with these, so its task numbers are the earlier run's), with {@code plan.sha256}, the digest of the tasks
 */
public record RunManifest(Map<String, String> settings, List<InputFile> files, List<String> runs,
    Map<String, String> planning) {
  /** The manifest's file name, in the staging folder and the output (readers skip names starting with _). */
  public static final String FILE = "_volpool_manifest.json";

  /** One input file as the listing found it. */
  public record InputFile(String path, long size, long modified) implements Comparable<InputFile> {
    @Override
    public int compareTo(InputFile o) {
      return path.compareTo(o.path);
    }
  }

  public RunManifest {
    settings = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(settings));
    files = List.copyOf(files.stream().sorted().toList());
    runs = List.copyOf(runs);
    planning = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(planning));
  }

  public RunManifest(Map<String, String> settings, List<InputFile> files, List<String> runs) {
    this(settings, files, runs, Map.of());
  }

  /** The same with {@code planning}. */
  public RunManifest withPlanning(Map<String, String> p) {
    return new RunManifest(settings, files, runs, p);
  }

  /** The SHA-256 of the settings and the files: two runs of equal fingerprints produce the same output. */
  public String fingerprint() {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-256");
      for (Map.Entry<String, String> e : new TreeMap<>(settings).entrySet()) {
        d.update((e.getKey() + "=" + e.getValue() + "\n").getBytes(StandardCharsets.UTF_8));
      }
      for (InputFile f : files) {
        d.update((f.path() + "\t" + f.size() + "\t" + f.modified() + "\n").getBytes(StandardCharsets.UTF_8));
      }
      return HexFormat.of().formatHex(d.digest());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The same settings and files, with {@code run} added to the runs. */
  public RunManifest withRun(String run) {
    List<String> r = new ArrayList<>(runs);
    r.add(run);
    return new RunManifest(settings, files, r, planning);
  }

  /** These settings with {@code more} input files added (an append's), and {@code run} added. */
  public RunManifest plus(List<InputFile> more, String run) {
    List<InputFile> f = new ArrayList<>(files);
    f.addAll(more);
    List<String> r = new ArrayList<>(runs);
    r.add(run);
    return new RunManifest(settings, f, r, planning);
  }

  /**
   * What differs from {@code earlier} in the settings, in words naming each setting and both values;
   * empty when they are the same.
   */
  public List<String> settingDifferences(RunManifest earlier) {
    List<String> out = new ArrayList<>();
    java.util.Set<String> names = new java.util.TreeSet<>(settings.keySet());
    names.addAll(earlier.settings.keySet());
    for (String n : names) {
      String now = settings.get(n);
      String then = earlier.settings.get(n);
      if (!java.util.Objects.equals(now, then)) {
        out.add(n + " was " + (then == null ? "not set" : "'" + then + "'") + ", now " + (now == null ? "not set" : "'"
            + now + "'"));
      }
    }
    return out;
  }

  /**
   * What differs from {@code earlier}: the settings, then the input files (added, gone, changed in size or
   * modification time), at most {@code limit} files named; empty when the fingerprints are equal.
   */
  public List<String> differences(RunManifest earlier, int limit) {
    List<String> out = settingDifferences(earlier);
    Map<String, InputFile> then = new TreeMap<>();
    earlier.files.forEach(f -> then.put(f.path(), f));
    Map<String, InputFile> now = new TreeMap<>();
    files.forEach(f -> now.put(f.path(), f));
    List<String> changed = new ArrayList<>();
    int added = 0;
    int gone = 0;
    int modified = 0;
    for (InputFile f : now.values()) {
      InputFile t = then.get(f.path());
      if (t == null) {
        added++;
        if (changed.size() < limit) {
          changed.add(f.path() + " is new");
        }
      } else if (t.size() != f.size() || t.modified() != f.modified()) {
        modified++;
        if (changed.size() < limit) {
          changed.add(f.path() + " changed (" + t.size() + " bytes, modified " + java.time.Instant.ofEpochMilli(t.modified())
              + "; now " + f.size() + " bytes, modified " + java.time.Instant.ofEpochMilli(f.modified()) + ")");
        }
      }
    }
    for (InputFile t : then.values()) {
      if (!now.containsKey(t.path())) {
        gone++;
        if (changed.size() < limit) {
          changed.add(t.path() + " is gone");
        }
      }
    }
    if (added + gone + modified > 0) {
      out.add("input files: " + added + " new, " + gone + " gone, " + modified + " changed (" + String.join("; ", changed)
          + (added + gone + modified > changed.size() ? "; ..." : "") + ")");
    }
    return out;
  }

  /** The setting holding the output's Parquet schema (one line), by which an append's columns are checked. */
  public static final String OUTPUT_SCHEMA = "volpool.output.schema";

  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  public String toJson() {
    ObjectNode root = JSON.createObjectNode();
    root.put("format", 1);
    root.put("fingerprint", fingerprint());
    ObjectNode s = root.putObject("settings");
    settings.forEach(s::put);
    ObjectNode pl = root.putObject("planning");
    planning.forEach(pl::put);
    ArrayNode r = root.putArray("runs");
    runs.forEach(r::add);
    ArrayNode f = root.putArray("files");
    for (InputFile x : files) {
      f.addObject().put("path", x.path()).put("size", x.size()).put("modified", x.modified());
    }
    try {
      return JSON.writeValueAsString(root) + "\n";
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The manifest in {@code json}.
   *
   * @throws IOException naming {@code where} when it is not a manifest volpool wrote
   */
  public static RunManifest parse(String json, String where) throws IOException {
    JsonNode root;
    try {
      root = JSON.readTree(json);
    } catch (IOException e) {
      throw new IOException(where + " is not a volpool manifest: " + e.getMessage(), e);
    }
    if (root == null || !root.path("settings").isObject() || !root.path("files").isArray() || root.path("format").asInt() != 1) {
      throw new IOException(where + " is not a volpool manifest of format 1");
    }
    Map<String, String> settings = new LinkedHashMap<>();
    root.get("settings").fields().forEachRemaining(e -> settings.put(e.getKey(), e.getValue().asText()));
    List<InputFile> files = new ArrayList<>();
    for (JsonNode f : root.get("files")) {
      files.add(new InputFile(f.path("path").asText(), f.path("size").asLong(), f.path("modified").asLong()));
    }
    List<String> runs = new ArrayList<>();
    root.path("runs").forEach(r -> runs.add(r.asText()));
    Map<String, String> planning = new LinkedHashMap<>();
    root.path("planning").fields().forEachRemaining(e -> planning.put(e.getKey(), e.getValue().asText()));
    return new RunManifest(settings, files, runs, planning);
  }

  /** The manifest in folder {@code dir}, or null when it has none. */
  public static RunManifest read(FileSystem fs, Path dir) throws IOException {
    return read(fs, dir, FILE);
  }

  /** The manifest {@code name} in folder {@code dir}, or null when there is none. */
  public static RunManifest read(FileSystem fs, Path dir, String name) throws IOException {
    Path p = new Path(dir, name);
    if (!fs.exists(p)) {
      return null;
    }
    try (InputStream in = fs.open(p)) {
      return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8), p.toString());
    }
  }

  /** Writes this manifest into folder {@code dir} (replacing one there). */
  public void write(FileSystem fs, Path dir) throws IOException {
    write(fs, dir, FILE);
  }

  /** Writes this manifest as {@code name} into folder {@code dir} (replacing one there). */
  public void write(FileSystem fs, Path dir, String name) throws IOException {
    try (OutputStream os = fs.create(new Path(dir, name), true)) {
      os.write(toJson().getBytes(StandardCharsets.UTF_8));
    }
  }
}
