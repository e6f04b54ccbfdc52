package io.volpool.job.config;

import io.volpool.conf.VolpoolOptions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The README documents exactly the declared settings, and its first lines give the two commands. */
class SettingsDocTest {
  static String readme() throws Exception {
    Path p = Files.exists(Paths.get("README.md")) ? Paths.get("README.md") : Paths.get("../README.md");
    return Files.readString(p);
  }

  static String doc(String name) throws Exception {
    Path p = Files.exists(Paths.get("docs", name)) ? Paths.get("docs", name) : Paths.get("..", "docs", name);
    return Files.readString(p);
  }

  @Test
  void theSettingsPageHasTheSettingsTable() throws Exception {
    assertThat(doc("settings.md")).as("docs/settings.md settings table; regenerate with scripts/volpool --settings-table")
        .contains(io.volpool.ops.Operators.markdownTable());
  }

  @Test
  void theOperatorsPageHasTheOperatorTable() throws Exception {
    assertThat(doc("operators.md")).as("docs/operators.md operator table; regenerate with scripts/volpool --operators-table")
        .contains(io.volpool.ops.Operators.markdownOperators());
  }

  /** The README is a user's guide: short, with a table of contents; the internals are in docs/. */
  @Test
  void theReadmeIsAGuideThatLinksTheDocs() throws Exception {
    String r = readme();
    assertThat(r.lines().count()).as("README.md lines").isLessThanOrEqualTo(220);
    assertThat(r).contains("## Contents");
    for (String page : List.of("settings.md", "operators.md", "failures.md", "memory.md", "cluster.md", "gpus.md", "storage.md",
        "architecture.md")) {
      assertThat(r).as("README links docs/" + page).contains("docs/" + page);
      assertThat(doc(page)).as("docs/" + page).isNotBlank();
    }
  }

  @Test
  void developmentListsEveryInternalProperty() throws Exception {
    String dev = doc("development.md");
    for (io.volpool.conf.InternalProperties.Property p : io.volpool.conf.InternalProperties.ALL) {
      assertThat(dev).as("docs/development.md lists -D" + p.key()).contains("| `" + p.key() + "` | "
          + (p.defaultValue() == null ? "(none)" : "`" + p.defaultValue() + "`") + " | ");
    }
  }

  @Test
  void readmeStartsWithTheTwoCommands() throws Exception {
    List<String> lines = readme().lines().limit(5).toList();
    assertThat(lines).anyMatch(l -> l.trim().startsWith("scripts/demo"));
    assertThat(lines).anyMatch(l -> l.trim().startsWith("mvn -B verify"));
    String ci = Files.readString(Files.exists(Paths.get(".ci/run")) ? Paths.get(".ci/run") : Paths.get("../.ci/run"));
    assertThat(ci).as(".ci/run calls the README's test command").contains("mvn -B verify");
  }

  @Test
  void defaultsAreValidAndTyped() throws Exception {
    JobSettings s = new JobSettings(Map.of("spark.volpool.input", "in", "spark.volpool.output", "out",
        "spark.volpool.pipeline", "avgpool3d", "spark.volpool.avgpool3d.kernelSize", "4"));
    assertThat(s.device()).isEqualTo(io.volpool.conf.Device.AUTO);
    assertThat(s.outputFormat()).isEqualTo(io.volpool.conf.FileFormat.PARQUET);
    assertThat(s.outputLayout()).isEqualTo(io.volpool.conf.OutputLayout.AUTO);
    // PyTorch's defaults: nn.AvgPool3d(4) is stride 4, padding 0
    assertThat(io.volpool.job.VolpoolJob.pipeline(s, new org.apache.hadoop.conf.Configuration()).stages().get(0).describe())
        .isEqualTo("avgpool3d(kernel=4, stride=4, padding=0, ceil_mode=false, count_include_pad=true)");
    assertThat(s.batchSize()).isZero();
    assertThat(s.overwrite()).isFalse();
    assertThat(s.effective()).containsEntry("spark.volpool.pipeline", "avgpool3d").containsEntry("spark.volpool.device", "auto");
  }

  @Test
  void invalidValuesNameKeyRuleAndValue() {
    Map<String, String> base = Map.of("spark.volpool.input", "in", "spark.volpool.output", "out", "spark.volpool.pipeline",
        "avgpool3d");
    assertThatThrownBy(() -> new JobSettings(with(base, "spark.volpool.device", "tpu")))
        .hasMessage("spark.volpool.device must be one of auto, cpu, gpu, got 'tpu'");
    assertThatThrownBy(() -> new JobSettings(with(base, "spark.volpool.output", "/data/out:2026/")))
        .isInstanceOf(io.volpool.conf.SettingsException.class)
        .hasMessage("spark.volpool.output=/data/out:2026/: the output's name 'out:2026' holds ':', which Hadoop paths"
            + " cannot name the files the job keeps beside it with; choose a name without ':'");
    assertThatThrownBy(() -> new JobSettings(with(base, "spark.volpool.batch.size", "-1")))
        .hasMessage("spark.volpool.batch.size must be at least 0, got -1");
    assertThatThrownBy(() -> new JobSettings(with(base, "spark.volpool.avgpool3d.ceilMode", "yes")))
        .hasMessage("spark.volpool.avgpool3d.ceilMode must be true or false, got 'yes'");
    assertThatThrownBy(() -> io.volpool.job.VolpoolJob.pipeline(new JobSettings(with(with(base, "spark.volpool.avgpool3d.padding",
        "2"), "spark.volpool.avgpool3d.kernelSize", "3")), new org.apache.hadoop.conf.Configuration()))
        .isInstanceOf(io.volpool.conf.SettingsException.class)
        .hasMessageContaining("spark.volpool.avgpool3d.*: avgpool3d: padding should be at most half of kernel_size");
    assertThatThrownBy(() -> new JobSettings(with(base, "spark.volpool.cluster.resourceTimeout", "3 weeks")))
        .hasMessage("spark.volpool.cluster.resourceTimeout must be a duration such as 180s, 3m or 1h (a bare number is"
            + " seconds), got '3 weeks'");
    assertThatThrownBy(() -> new JobSettings(with(base, "spark.volpool.input.tensorShape", "3,16,32")))
        .hasMessageContaining("must be four positive integers C,D,H,W, got '3,16,32'");
    assertThatThrownBy(() -> new JobSettings(Map.of("spark.volpool.output", "out")))
        .hasMessageStartingWith("missing required setting spark.volpool.input");
    // as PyTorch has no default model: a job without a pipeline says which setting, and how to write it
    assertThatThrownBy(() -> new JobSettings(Map.of("spark.volpool.input", "in", "spark.volpool.output", "out",
        "spark.volpool.fused.stride", "2")))
        .hasMessageStartingWith("missing required setting spark.volpool.pipeline: the stages to run")
        .hasMessageContaining("spark.volpool.pipeline=avgpool3d with spark.volpool.avgpool3d.kernelSize=2");
  }

  /**
   * Every setting is declared once (io.volpool.conf.VolpoolOptions); code that reads one or names one
   * in a message goes through the declaration, so no string literal in the main sources spells a key.
   */
  @Test
  void noMainSourceSpellsASettingKeyOutsideItsDeclaration() throws Exception {
    Path root = Files.exists(Paths.get("udf")) ? Paths.get(".") : Paths.get("..");
    java.util.regex.Pattern literal = java.util.regex.Pattern.compile("\"(?:[^\"\\\\\n]|\\\\.)*\"");
    List<String> found = new java.util.ArrayList<>();
    for (String module : List.of("udf", "job")) {
      try (var files = Files.walk(root.resolve(module).resolve("src/main/java"))) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          if (f.toString().replace('\\', '/').contains("/io/volpool/conf/")) {
            continue;
          }
          List<String> lines = Files.readAllLines(f);
          for (int i = 0; i < lines.size(); i++) {
            String t = lines.get(i).trim();
            if (t.startsWith("*") || t.startsWith("//") || t.startsWith("/*")) {
              continue;
            }
            java.util.regex.Matcher m = literal.matcher(lines.get(i));
            while (m.find()) {
              if (m.group().contains(VolpoolOptions.PREFIX)) {
                found.add(root.relativize(f) + ":" + (i + 1) + ": " + m.group());
              }
            }
          }
        }
      }
    }
    assertThat(found).as("setting keys spelled outside io.volpool.conf.VolpoolOptions").isEmpty();
  }

  @Test
  void renamedSettingsStillWorkUnderTheirOldNames() {
    Map<String, String> base = Map.of("spark.volpool.input", "in", "spark.volpool.output", "out", "spark.volpool.pipeline",
        "identity");
    JobSettings old = new JobSettings(with(with(with(base, "spark.volpool.batchSize", "7"), "spark.volpool.mode",
        "overwrite"), "spark.volpool.input.npy.maxHeaderBytes", "4096"));
    assertThat(old.batchSize()).isEqualTo(7);
    assertThat(old.overwrite()).isTrue();
    assertThat(old.npyMaxHeaderBytes()).isEqualTo(4096);
    JobSettings renamed = new JobSettings(with(with(base, "spark.volpool.batch.size", "7"), "spark.volpool.output.mode",
        "overwrite"));
    assertThat(renamed.batchSize()).isEqualTo(7);
    assertThat(renamed.overwrite()).isTrue();
    assertThat(new JobSettings(with(base, "spark.volpool.input.npy.maxHeaderSize", "64k")).npyMaxHeaderBytes())
        .isEqualTo(65536);
    assertThat(new JobSettings(with(base, "spark.volpool.cluster.resourceTimeout", "3m")).resourceTimeoutSeconds())
        .isEqualTo(180);
    assertThat(new JobSettings(with(base, "spark.volpool.cluster.resourceTimeout", "45")).resourceTimeoutSeconds())
        .as("a bare number is seconds, as before").isEqualTo(45);
    assertThatThrownBy(() -> new JobSettings(with(with(base, "spark.volpool.batchSize", "7"), "spark.volpool.batch.size",
        "8"))).hasMessage("both spark.volpool.batch.size and its former name spark.volpool.batchSize are set (to '8' and"
            + " '7'); remove spark.volpool.batchSize");
    assertThat(io.volpool.ops.Operators.markdownTable())
        .contains("Formerly `spark.volpool.batchSize` (still read, with a warning).");
  }

  @Test
  void everyDeclaredDefaultPassesItsOwnCheck() {
    for (io.volpool.conf.ConfKey<?> k : io.volpool.ops.Operators.settings()) {
      if (k.defaultValue() != null) {
        assertThat(k.get(Map.of())).as(k.key()).isNotNull();
      }
    }
  }

  static Map<String, String> with(Map<String, String> m, String k, String v) {
    java.util.HashMap<String, String> c = new java.util.HashMap<>(m);
    c.put(k, v);
    return c;
  }

  /** Every key a class declares is in the full list: keys are added to it as they are declared, none kept by hand. */
  @Test
  void everyDeclaredKeyIsRegistered() throws Exception {
    java.util.Set<String> registered = new java.util.HashSet<>();
    io.volpool.ops.Operators.settings().forEach(k -> assertThat(registered.add(k.key())).as(k.key() + " once").isTrue());
    List<Class<?>> declaring = List.of(VolpoolOptions.class, io.volpool.ops.Operators.class,
        io.volpool.ops.avgpool3d.AvgPool3d.class, io.volpool.ops.maxpool3d.MaxPool3d.class, io.volpool.ops.fused.Fused.class);
    int fields = 0;
    for (Class<?> c : declaring) {
      for (java.lang.reflect.Field f : c.getDeclaredFields()) {
        if (f.getType() == io.volpool.conf.ConfKey.class && java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
          f.setAccessible(true);
          String key = ((io.volpool.conf.ConfKey<?>) f.get(null)).key();
          assertThat(registered).as(c.getSimpleName() + "." + f.getName() + " (" + key + ") in Operators.settings()")
              .contains(key);
          fields++;
        }
      }
    }
    assertThat(fields).isEqualTo(registered.size());
    // a second declaration of a key fails where it is made
    io.volpool.conf.ConfKey.Declared d = new io.volpool.conf.ConfKey.Declared();
    assertThatThrownBy(() -> d.add(io.volpool.conf.ConfKey.text(VolpoolOptions.DEVICE.key(), null, "again")))
        .hasMessageContaining("spark.volpool.device is declared twice");
  }

  @Test
  void optionsAreTypedAndSayTheirChoices() {
    Map<String, String> base = Map.of("spark.volpool.input", "in", "spark.volpool.output", "out", "spark.volpool.pipeline",
        "identity");
    JobSettings s = new JobSettings(with(with(base, "spark.volpool.device", "GPU"), "spark.volpool.output.layout", "Rows"));
    assertThat(s.device()).isEqualTo(io.volpool.conf.Device.GPU);
    assertThat(s.outputLayout()).isEqualTo(io.volpool.conf.OutputLayout.ROWS);
    JobSettings npy = new JobSettings(with(base, "spark.volpool.input.format", "npy"));
    assertThat(npy.inputFormat()).isEqualTo(io.volpool.conf.FileFormat.NPY);
    assertThat(npy.outputFormat()).as("unset: the input's").isEqualTo(io.volpool.conf.FileFormat.NPY);
    assertThat(s.effective()).containsEntry("spark.volpool.device", "GPU");
    assertThatThrownBy(() -> new JobSettings(with(base, "spark.volpool.output.layout", "planes")))
        .hasMessage("spark.volpool.output.layout must be one of auto, rows, volume, got 'planes'");
  }
}
