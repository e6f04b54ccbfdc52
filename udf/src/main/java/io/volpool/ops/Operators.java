package io.volpool.ops;

import io.volpool.conf.ConfKey;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import io.volpool.op.Operator;
import io.volpool.op.OperatorInputs;
import io.volpool.op.Pipeline;
import io.volpool.op.SqlFunction;
import io.volpool.op.Stage;
import io.volpool.ops.avgpool3d.AvgPool3d;
import io.volpool.ops.fused.Fused;
import io.volpool.ops.maxpool3d.MaxPool3d;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The operators volpool runs: the one list of them. The pipeline setting, the full settings list,
 * the SQL functions and the README's tables iterate it; nothing outside an operator's own package
 * names an operator (a test scans the sources). To add an operator, write its package under
 * {@code io.volpool.ops} (spec, CPU kernels, CUDA launches, settings, SQL functions), its kernels in
 * {@code volpool.cu}, and add it here.
 */
public final class Operators {
  private Operators() {}

  /** Every operator, in the order the README lists them. */
  public static final List<Operator> ALL = List.of(Fused.OPERATOR, AvgPool3d.OPERATOR, MaxPool3d.OPERATOR);

  /** The pipeline's name for no stage at all: volumes copied through (I/O benchmarks). */
  public static final String IDENTITY = "identity";

  public static final ConfKey<String> PIPELINE = ConfKey.text(VolpoolOptions.PREFIX + "pipeline",
      null, "Comma list of stages, run in order: "
          + ALL.stream().map(o -> "`" + o.name() + "`").collect(Collectors.joining(", ")) + "; `" + IDENTITY
          + "` alone copies tensors through (I/O benchmarks). Required: as in PyTorch, no model or pool is a default.");

  /** Every {@code spark.volpool.*} setting: the job's, the pipeline, then each operator's. */
  public static List<ConfKey<?>> settings() {
    List<ConfKey<?>> all = new ArrayList<>(VolpoolOptions.ALL);
    all.add(PIPELINE);
    ALL.forEach(o -> all.addAll(o.settings()));
    return List.copyOf(all);
  }

  /** The operator called {@code name} (any case), or null. */
  public static Operator named(String name) {
    String n = name.trim().toLowerCase(Locale.ROOT);
    return ALL.stream().filter(o -> o.name().equals(n)).findFirst().orElse(null);
  }

  /** Every SQL function of every operator. */
  public static List<SqlFunction> sqlFunctions() {
    return ALL.stream().flatMap(o -> o.sqlFunctions().stream()).toList();
  }

  /** The stage names of {@link #PIPELINE} in order, checked; empty for {@code identity}. */
  public static List<String> stageNames(java.util.Map<String, String> values) {
    String v = PIPELINE.get(values);
    if (v == null) {
      throw new SettingsException("missing required setting " + PIPELINE.key() + ": the stages to run, a comma list of "
          + ALL.stream().map(Operator::name).collect(Collectors.joining(", ")) + " (e.g. " + PIPELINE.key()
          + "=avgpool3d with " + AvgPool3d.KERNEL.key() + "=2), or " + IDENTITY + " to copy tensors through");
    }
    List<String> out = new ArrayList<>();
    for (String s : v.split(",", -1)) {
      String t = s.trim().toLowerCase(Locale.ROOT);
      if (t.isEmpty()) {
        throw new SettingsException(PIPELINE.key() + " has an empty stage in '" + v + "'; list stages separated by"
            + " single commas, e.g. fused,avgpool3d");
      }
      if (!t.equals(IDENTITY) && named(t) == null) {
        throw new SettingsException(PIPELINE.key() + " takes a comma list of "
            + ALL.stream().map(Operator::name).collect(Collectors.joining(", ")) + " (or " + IDENTITY + " alone), got '"
            + v + "' (unknown stage '" + s.trim() + "')");
      }
      out.add(t);
    }
    if (out.isEmpty()) {
      throw new SettingsException(PIPELINE.key() + " is empty; use " + IDENTITY + " to copy tensors through");
    }
    if (out.contains(IDENTITY)) {
      if (out.size() > 1) {
        throw new SettingsException(PIPELINE.key() + "=" + IDENTITY + " cannot be combined with other stages, got '" + v
            + "'");
      }
      return List.of();
    }
    return out;
  }

  /** The pipeline the settings describe, each stage read by its operator (which may read files, e.g. a model). */
  public static Pipeline pipeline(OperatorInputs in) throws java.io.IOException {
    List<Stage> stages = new ArrayList<>();
    for (String name : stageNames(in.values())) {
      stages.add(named(name).fromSettings(in));
    }
    return new Pipeline(stages);
  }

  /** The README's settings table: the job's settings, then each operator's under its name. */
  public static String markdownTable() {
    StringBuilder sb = new StringBuilder("| key | default | meaning |\n| --- | --- | --- |\n");
    for (ConfKey<?> k : settings()) {
      sb.append(k.markdownRow()).append('\n');
    }
    return sb.toString();
  }

  /** The README's operator table: each operator, what it computes, and its SQL functions. */
  public static String markdownOperators() {
    StringBuilder sb = new StringBuilder("| stage | computes | settings | SQL functions |\n| --- | --- | --- | --- |\n");
    for (Operator o : ALL) {
      sb.append("| `").append(o.name()).append("` | ").append(o.summary()).append(" | ")
          .append(o.settings().stream().map(k -> "`" + k.key().substring(VolpoolOptions.PREFIX.length()) + "`")
              .collect(Collectors.joining(", ")))
          .append(" | ").append(o.sqlFunctions().stream().map(f -> "`" + f.signature() + "`")
              .collect(Collectors.joining("<br>")))
          .append(" |\n");
    }
    return sb.toString();
  }
}
