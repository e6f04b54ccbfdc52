package io.volpool.job;

import io.volpool.io.npy.NpyVolumeInput;
import io.volpool.io.parquet.ParquetVolumeInput;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The engine's shape, checked on the sources: packages import one way only (conf, memory, format,
 * op, ops, backend, then io, cpu and cuda side by side, then exec, spark and job), and no code outside
 * the cpu and cuda packages names a backend type, except the one place that chooses the backend
 * ({@code exec/Backends}) and the benchmark tools that measure each backend on its own.
 */
class PackageRulesTest {
  /** Each package's layer: a package may import only packages of lower layers. */
  private static final Map<String, Integer> LAYER = Map.ofEntries(Map.entry("conf", 0), Map.entry("memory", 1),
      Map.entry("format", 2), Map.entry("op", 3), Map.entry("ops", 4), Map.entry("backend", 5), Map.entry("io", 6),
      Map.entry("cpu", 6), Map.entry("cuda", 6), Map.entry("exec", 7), Map.entry("spark", 8), Map.entry("job", 9),
      Map.entry("bench", 10));
  private static final Pattern PACKAGE = Pattern.compile("^package io\\.volpool\\.([a-z]+)", Pattern.MULTILINE);
  private static final Pattern USE = Pattern.compile("\\bio\\.volpool\\.([a-z]+)\\.[A-Za-z]");
  private static final Pattern BACKEND_TYPE = Pattern.compile("\\b(io\\.volpool\\.(cpu|cuda)\\.|CpuBackend|CudaBackend)");

  record Source(Path path, String pkg, List<String> code) {}

  /** Every main source of udf and job, comment lines blanked (line numbers kept). */
  static List<Source> sources() throws Exception {
    Path root = Files.exists(Paths.get("udf")) ? Paths.get(".") : Paths.get("..");
    List<Source> all = new ArrayList<>();
    for (String module : List.of("udf", "job")) {
      try (var files = Files.walk(root.resolve(module).resolve("src/main/java"))) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          String text = Files.readString(f);
          Matcher m = PACKAGE.matcher(text);
          assertThat(m.find()).as(f + " has a package").isTrue();
          List<String> code = new ArrayList<>();
          for (String line : text.split("\n")) {
            String t = line.trim();
            // comment lines count as empty, so line numbers stay the file's
            code.add(t.startsWith("*") || t.startsWith("//") || t.startsWith("/*") ? "" : line);
          }
          all.add(new Source(root.relativize(f), m.group(1), code));
        }
      }
    }
    assertThat(all).as("main sources found").hasSizeGreaterThan(50);
    return all;
  }

  private static final Pattern SYSTEM_PROPERTY = Pattern.compile(
      "(System\\.getProperty|Long\\.getLong|Integer\\.getInteger|Boolean\\.getBoolean)\\(\\s*\"volpool\\.");
  private static final Pattern KEY = Pattern.compile("\"(volpool\\.[A-Za-z0-9.]+)\"");

  @Test
  void systemPropertiesAreDeclaredInOnePlace() throws Exception {
    List<String> wrong = new ArrayList<>();
    for (Source s : sources()) {
      for (int i = 0; i < s.code().size(); i++) {
        if (SYSTEM_PROPERTY.matcher(s.code().get(i)).find()) {
          wrong.add(s.path() + ":" + (i + 1) + ": " + s.code().get(i).trim());
        }
      }
    }
    assertThat(wrong).as("-Dvolpool.* properties are read through conf/InternalProperties, where each is declared and"
        + " documented").isEmpty();
  }

  @Test
  void everyVolpoolKeyIsSpelledOnce() throws Exception {
    Map<String, List<String>> at = new java.util.TreeMap<>();
    for (Source s : sources()) {
      for (int i = 0; i < s.code().size(); i++) {
        Matcher m = KEY.matcher(s.code().get(i));
        while (m.find()) {
          at.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(s.path() + ":" + (i + 1));
        }
      }
    }
    assertThat(at).as("volpool.* keys found").isNotEmpty();
    at.values().removeIf(l -> l.size() == 1);
    assertThat(at).as("footer keys, accumulator names, configuration and system property keys: each spelled once, as"
        + " a constant the others use").isEmpty();
  }

  @Test
  void packagesImportDownwardOnly() throws Exception {
    List<String> wrong = new ArrayList<>();
    for (Source s : sources()) {
      Integer mine = LAYER.get(s.pkg());
      assertThat(mine).as("layer of package io.volpool." + s.pkg() + " (" + s.path() + "): add it to LAYER").isNotNull();
      for (int i = 0; i < s.code().size(); i++) {
        Matcher m = USE.matcher(s.code().get(i));
        while (m.find()) {
          String used = m.group(1);
          Integer theirs = LAYER.get(used);
          if (!used.equals(s.pkg()) && (theirs == null || theirs >= mine)) {
            wrong.add(s.path() + ":" + (i + 1) + ": " + s.pkg() + " uses io.volpool." + used);
          }
        }
      }
    }
    assertThat(wrong).as("imports against the layers " + LAYER).isEmpty();
  }

  @Test
  void writersAskTheVolumeSourceInsteadOfDowncastingIt() throws Exception {
    Pattern downcast = Pattern.compile("\\(\\s*(ParquetVolumeInput\\.Row|NpyVolumeInput\\.FileVolume|RowInput\\.RowVolume)"
        + "\\s*\\)|instanceof\\s+(ParquetVolumeInput\\.Row|NpyVolumeInput\\.FileVolume|RowInput\\.RowVolume)");
    List<String> wrong = new ArrayList<>();
    for (Source s : sources()) {
      for (int i = 0; i < s.code().size(); i++) {
        if (downcast.matcher(s.code().get(i)).find()) {
          wrong.add(s.path() + ":" + (i + 1) + ": " + s.code().get(i).trim());
        }
      }
    }
    assertThat(wrong).as("downcasts of a volume to its reader's type").isEmpty();
  }

  /** Comments say why in the code's own terms: an issue number means nothing to a reader of the source. */
  @Test
  void noSourceCitesAnIssueNumber() throws Exception {
    Path root = Files.exists(Paths.get("udf")) ? Paths.get(".") : Paths.get("..");
    Pattern issue = Pattern.compile("\\bissues? #?[0-9]+");
    List<String> found = new ArrayList<>();
    for (String module : List.of("udf", "job", "bench")) {
      try (var files = Files.walk(root.resolve(module).resolve("src"))) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          List<String> lines = Files.readAllLines(f);
          for (int i = 0; i < lines.size(); i++) {
            if (issue.matcher(lines.get(i)).find()) {
              found.add(root.relativize(f) + ":" + (i + 1) + ": " + lines.get(i).trim());
            }
          }
        }
      }
    }
    assertThat(found).as("issue numbers in sources").isEmpty();
  }

  @Test
  void executorSettingsAreParsedInOnePlace() throws Exception {
    // the driver's job settings and the executor plugin both take ExecutorSettings.parse: no second reading of a key
    Pattern read = Pattern.compile("\\b(DEVICE|BATCH_SIZE|CPU_THREADS|GPU_MEMORY_FRACTION|MEMORY_BUDGET|GPU_PINNED_POOL|NPY_MAX_HEADER)"
        + "\\.(get|raw)\\(");
    List<String> wrong = new ArrayList<>();
    for (Source s : sources()) {
      if (s.path().getFileName().toString().equals("ExecutorSettings.java")) {
        continue;
      }
      for (int i = 0; i < s.code().size(); i++) {
        if (read.matcher(s.code().get(i)).find()) {
          wrong.add(s.path() + ":" + (i + 1) + ": " + s.code().get(i).trim());
        }
      }
    }
    assertThat(wrong).as("executor settings parsed outside ExecutorSettings").isEmpty();
  }

  @Test
  void executorStateIsLookedUpInOnePlace() throws Exception {
    // the budget, the backend and the codecs of an executor JVM come from ExecutorRuntime: no caller resolves its own
    Pattern own = Pattern.compile("MemoryBudget\\.forJvm\\(|CodecWarmUp\\.warm\\(|Backends\\.(get|closeAll)\\(");
    List<String> wrong = new ArrayList<>();
    for (Source s : sources()) {
      if (s.path().getFileName().toString().equals("ExecutorRuntime.java")) {
        continue;
      }
      for (int i = 0; i < s.code().size(); i++) {
        if (own.matcher(s.code().get(i)).find()) {
          wrong.add(s.path() + ":" + (i + 1) + ": " + s.code().get(i).trim());
        }
      }
    }
    assertThat(wrong).as("executor state resolved outside ExecutorRuntime").isEmpty();
  }

  @Test
  void slabsAreSizedInOnePlace() throws Exception {
    // every runner asks the task's Planner; the backends answer it (their plans of whole volumes
    // size their own slabs, being the backend), no runner computes a share or asks the backend itself
    List<String> sized = new ArrayList<>();
    for (Source s : sources()) {
      String name = s.path().getFileName().toString();
      if (name.equals("Planner.java") || name.equals("OutputRows.java") || s.pkg().equals("cpu") || s.pkg().equals("cuda")
          || s.pkg().equals("backend")) {
        continue;
      }
      for (int i = 0; i < s.code().size(); i++) {
        String line = s.code().get(i);
        if (line.contains("slabPlanes(") && !line.contains("vp.slabPlanes()") || line.contains("slabShare(")
            || line.contains("OutputRows.rowPlanes(") || line.contains("backend.plan(")) {
          sized.add(s.path() + ":" + (i + 1) + ": " + line.trim());
        }
      }
    }
    assertThat(sized).as("batches or slabs sized outside the Planner").isEmpty();
  }

  @Test
  void theRunSpecIsBuiltInOnePlace() throws Exception {
    List<String> built = new ArrayList<>();
    for (Source s : sources()) {
      for (int i = 0; i < s.code().size(); i++) {
        if (s.code().get(i).contains("new RunSpec(")) {
          built.add(s.path().getFileName() + ":" + (i + 1));
        }
      }
    }
    assertThat(built).as("places that build the RunSpec").hasSize(1);
    assertThat(built.get(0)).startsWith("VolpoolJob.java:");
  }

  @Test
  void parquetFilesAreOpenedWithTheJobsConfiguration() throws Exception {
    // ParquetFileReader.open(InputFile) without options parses Hadoop's XML defaults into a fresh Configuration
    // every time (20-170 ms each in the driver's profile); Files2.openParquet passes the job's
    List<String> wrong = new ArrayList<>();
    for (Source s : sources()) {
      if (s.path().endsWith(Paths.get("io/volpool/io/Files2.java"))) {
        continue;
      }
      for (int i = 0; i < s.code().size(); i++) {
        if (s.code().get(i).contains("ParquetFileReader.open(")) {
          wrong.add(s.path() + ":" + (i + 1) + ": " + s.code().get(i).trim());
        }
      }
    }
    assertThat(wrong).as("Parquet files opened without Files2.openParquet").isEmpty();
  }

  @Test
  void onlyTheBackendChooserNamesABackendType() throws Exception {
    List<String> wrong = new ArrayList<>();
    for (Source s : sources()) {
      boolean allowed = s.pkg().equals("cpu") || s.pkg().equals("cuda") || s.pkg().equals("bench")
          || s.path().endsWith(Paths.get("io/volpool/exec/Backends.java"));
      if (allowed) {
        continue;
      }
      for (int i = 0; i < s.code().size(); i++) {
        if (BACKEND_TYPE.matcher(s.code().get(i)).find()) {
          wrong.add(s.path() + ":" + (i + 1) + ": " + s.code().get(i).trim());
        }
      }
    }
    assertThat(wrong).as("backend types named outside their packages and exec/Backends").isEmpty();
  }
}
