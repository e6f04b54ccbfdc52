package io.volpool.job.config;

import io.volpool.conf.ConfKey;
import io.volpool.conf.Device;
import io.volpool.conf.FileFormat;
import io.volpool.conf.OutputLayout;
import io.volpool.conf.OutputMode;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;

import io.volpool.ops.Operators;
import io.volpool.op.VolumeShape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * The job's {@code spark.volpool.*} settings, parsed and checked once when made, into immutable typed values.
 * Precedence, highest first: {@code --conf} flags, then {@code --properties-file} entries, then
 * Spark's defaults file; a key set nowhere takes its default from {@link VolpoolOptions}. Unknown
 * {@code spark.volpool.*} keys are errors (a typo must not silently fall back to a default).
 * Driver-only: executors get the {@link io.volpool.spark.RunSpec} built from it.
 */
public final class JobSettings {
  private final Map<String, String> values;

  private final boolean forTransform;
  /** Every value, parsed and checked once when the settings are made. */
  private final Parsed p;

  public JobSettings(Map<String, String> conf) {
    this(conf, false);
  }

  /**
   * Settings of {@link io.volpool.job.Volpool#transform}: the same keys, without input and output.
   * Keys may be given without the {@code spark.volpool.} prefix.
   */
  public static JobSettings forTransform(Map<String, String> options) {
    return forTransform(Map.of(), options);
  }

  /**
   * Settings of {@link io.volpool.job.Volpool#transform}: {@code session}'s {@code spark.volpool.*}
   * values are the defaults (the job-only keys among them ignored: the session may be a job's),
   * {@code options} override them.
   */
  public static JobSettings forTransform(Map<String, String> session, Map<String, String> options) {
    List<String> jobOnly = List.of(VolpoolOptions.INPUT.key(), VolpoolOptions.OUTPUT.key(),
        VolpoolOptions.INPUT_FORMAT.key(), VolpoolOptions.OUTPUT_FORMAT.key(), VolpoolOptions.MODE.key());
    Map<String, String> m = new java.util.LinkedHashMap<>();
    session.forEach((k, v) -> {
      if (k.startsWith(VolpoolOptions.PREFIX) && !jobOnly.contains(k)) {
        m.put(k, v);
      }
    });
    Map<String, String> given = new java.util.LinkedHashMap<>();
    options.forEach((k, v) -> given.put(k.startsWith(VolpoolOptions.PREFIX) ? k : VolpoolOptions.PREFIX + k, v));
    for (String k : jobOnly) {
      if (given.containsKey(k)) {
        throw new SettingsException(k + " is a setting of the job; Volpool.transform reads and returns a DataFrame");
      }
    }
    m.putAll(given);
    return new JobSettings(m, true);
  }

  private JobSettings(Map<String, String> conf, boolean forTransform) {
    this.forTransform = forTransform;
    this.values = new TreeMap<>();
    conf.forEach((k, v) -> {
      if (k.startsWith(VolpoolOptions.PREFIX)) {
        values.put(k, v.trim());
      }
    });
    Set<String> known = Operators.settings().stream().map(ConfKey::key).collect(Collectors.toSet());
    for (ConfKey<?> k : Operators.settings()) {
      for (String old : k.aliases()) {
        known.add(old);
        if (values.containsKey(old) && values.containsKey(k.key())) {
          throw new SettingsException("both " + k.key() + " and its former name " + old + " are set (to '"
              + values.get(k.key()) + "' and '" + values.get(old) + "'); remove " + old);
        }
      }
    }
    for (Map.Entry<String, String> e : values.entrySet()) {
      if (e.getValue().isEmpty()) {
        // a script's unset variable (--conf spark.volpool.pipeline=$P) must not quietly run the default
        ConfKey<?> declared = Operators.settings().stream().filter(c -> c.key().equals(e.getKey())).findFirst().orElse(null);
        throw new SettingsException(e.getKey() + " is set to an empty value; give it a value"
            + (declared != null && declared.defaultValue() != null ? " or remove the setting for its default ("
                + declared.defaultValue() + ")" : declared != null ? " or remove the setting" : ""));
      }
    }
    for (String k : values.keySet()) {
      if (VolpoolOptions.RENAMED.containsKey(k)) {
        throw new SettingsException("setting " + k + " no longer exists; use " + VolpoolOptions.RENAMED.get(k));
      }
      if (!known.contains(k)) {
        String near = closest(k);
        throw new SettingsException("unknown setting " + k + (near != null ? "; did you mean " + near + "?"
            : "; known settings: " + Operators.settings().stream().map(ConfKey::key).sorted()
                .collect(Collectors.joining(", "))));
      }
    }
    this.p = new Parsed();
  }

  /**
   * Warnings for keys that look like misspelled volpool settings ({@code spark.volpol.input},
   * {@code spark.vol-pool.device}): Spark would ignore them silently.
   */
  public static List<String> lookalikeKeys(java.util.Collection<String> keys) {
    List<String> out = new ArrayList<>();
    for (String k : keys) {
      if (!k.startsWith("spark.") || k.startsWith(VolpoolOptions.PREFIX)) {
        continue;
      }
      String rest = k.substring("spark.".length());
      int dot = rest.indexOf('.');
      String first = (dot < 0 ? rest : rest.substring(0, dot)).toLowerCase(Locale.ROOT);
      if (!first.equals("volpool") && distance(first, "volpool") <= 2) {
        out.add("setting " + k + " looks like a volpool setting but is not one (" + VolpoolOptions.PREFIX + "*); Spark ignores it."
            + " Did you mean " + VolpoolOptions.PREFIX + (dot < 0 ? "" : rest.substring(dot + 1)) + "?");
      }
    }
    return out;
  }

  /** The known key {@code key} most likely meant (same letters in another case, or a few edits away), or null. */
  public static String closest(String key) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (ConfKey<?> k : Operators.settings()) {
      if (k.key().equalsIgnoreCase(key) || k.aliases().stream().anyMatch(a -> a.equalsIgnoreCase(key))) {
        return k.key();
      }
      int d = distance(key.toLowerCase(Locale.ROOT), k.key().toLowerCase(Locale.ROOT));
      if (d < bestDistance) {
        bestDistance = d;
        best = k.key();
      }
    }
    if (bestDistance <= 3) {
      return best;
    }
    // a shortened name (spark.volpool.avgpool3d.kernel): the one key of the same area that starts with it
    String lower = key.toLowerCase(Locale.ROOT);
    List<String> longer = Operators.settings().stream().map(ConfKey::key)
        .filter(k -> k.toLowerCase(Locale.ROOT).startsWith(lower) && k.lastIndexOf('.') == key.lastIndexOf('.')).toList();
    return longer.size() == 1 ? longer.get(0) : null;
  }

  static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        cur[j] = Math.min(Math.min(cur[j - 1], prev[j]) + 1, prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1));
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  /**
   * Parses every setting once, into the values below: each passes its own check, in the pipeline or
   * not (operators check their cross-parameter rules, and read their files, when the pipeline is built).
   */
  private final class Parsed {
    final String input = forTransform ? null : required(VolpoolOptions.INPUT);
    final String output = forTransform ? null : required(VolpoolOptions.OUTPUT);
    final FileFormat inputFormat = VolpoolOptions.INPUT_FORMAT.get(values);
    final FileFormat outputFormat = java.util.Objects.requireNonNullElse(VolpoolOptions.OUTPUT_FORMAT.get(values), inputFormat);
    final OutputMode mode = VolpoolOptions.MODE.get(values);
    final String outputCompression = VolpoolOptions.OUTPUT_COMPRESSION.get(values);
    // device, batching, threads, budgets: parsed as the executor plugin parses them
    final io.volpool.conf.ExecutorSettings executor = io.volpool.conf.ExecutorSettings.parse(values);
    final List<String> stageNames = Operators.stageNames(values);
    final boolean all = checkAll();
    final long outputRowBytes = VolpoolOptions.OUTPUT_ROW_BYTES.get(values);
    final OutputLayout outputLayout = VolpoolOptions.OUTPUT_LAYOUT.get(values);
    final io.volpool.conf.OutputDtype outputDtype = VolpoolOptions.OUTPUT_DTYPE.get(values);
    final boolean outputSharedFilesystem = VolpoolOptions.OUTPUT_SHARED_FS.get(values);
    final boolean spreadVolumes = VolpoolOptions.SPREAD_VOLUMES.get(values);
    final int resourceTimeoutSeconds = VolpoolOptions.RESOURCE_TIMEOUT.get(values);
    final String tensorColumn = VolpoolOptions.INPUT_TENSOR_COLUMN.raw(values);
    final VolumeShape tensorShape = parseTensorShape();
    final io.volpool.io.InputRescale rescale = parseRescale();
    final String badRecordsPath = VolpoolOptions.BAD_RECORDS_PATH.get(values);

    Parsed() {
      if (output != null) {
        String name = output.replaceAll("/+$", "");
        name = name.substring(name.lastIndexOf('/') + 1);
        if (name.contains(":")) {
          // the staging folder, owner file and manifest beside the output are named after it, and a Hadoop path's
          // name cannot hold ':' (taken for a URI scheme)
          throw new SettingsException(VolpoolOptions.OUTPUT.key() + "=" + output + ": the output's name '" + name
              + "' holds ':', which Hadoop paths cannot name the files the job keeps beside it with; choose a name"
              + " without ':'");
        }
      }
      if (outputLayout == OutputLayout.ROWS && outputFormat == FileFormat.NPY) {
        throw new SettingsException(VolpoolOptions.OUTPUT_LAYOUT.key() + "=rows needs Parquet output ("
            + VolpoolOptions.OUTPUT_FORMAT.key() + "=parquet): an .npy file holds one array");
      }
      if (outputDtype == io.volpool.conf.OutputDtype.BFLOAT16 && outputFormat == FileFormat.NPY && !forTransform) {
        throw new SettingsException(VolpoolOptions.OUTPUT_DTYPE.key() + "=bfloat16 needs Parquet output ("
            + VolpoolOptions.OUTPUT_FORMAT.key() + "=parquet): numpy has no bfloat16 dtype, so no .npy file can hold it; use"
            + " float16 for .npy output");
      }
    }

    private boolean checkAll() {
      Operators.settings().forEach(k -> k.get(values));
      return true;
    }

    private io.volpool.io.InputRescale parseRescale() {
      String slopeColumn = VolpoolOptions.INPUT_RESCALE_SLOPE_COLUMN.raw(values);
      String interceptColumn = VolpoolOptions.INPUT_RESCALE_INTERCEPT_COLUMN.raw(values);
      for (ConfKey<?>[] pair : List.of(new ConfKey<?>[] {VolpoolOptions.INPUT_RESCALE_SLOPE,
          VolpoolOptions.INPUT_RESCALE_SLOPE_COLUMN}, new ConfKey<?>[] {VolpoolOptions.INPUT_RESCALE_INTERCEPT,
          VolpoolOptions.INPUT_RESCALE_INTERCEPT_COLUMN})) {
        if (values.containsKey(pair[0].key()) && values.containsKey(pair[1].key())) {
          throw new SettingsException("both " + pair[0].key() + " and " + pair[1].key() + " are set; a value comes from"
              + " the setting or from the column, not both");
        }
      }
      if ((slopeColumn != null || interceptColumn != null) && inputFormat != FileFormat.PARQUET && !forTransform) {
        throw new SettingsException(VolpoolOptions.INPUT_RESCALE_SLOPE_COLUMN.key() + " and "
            + VolpoolOptions.INPUT_RESCALE_INTERCEPT_COLUMN.key() + " name Parquet columns; .npy input has none (use "
            + VolpoolOptions.INPUT_RESCALE_SLOPE.key() + " and " + VolpoolOptions.INPUT_RESCALE_INTERCEPT.key() + ")");
      }
      io.volpool.format.Rescale fixed = new io.volpool.format.Rescale(
          (float) (double) VolpoolOptions.INPUT_RESCALE_SLOPE.get(values),
          (float) (double) VolpoolOptions.INPUT_RESCALE_INTERCEPT.get(values));
      return new io.volpool.io.InputRescale(fixed, slopeColumn, interceptColumn);
    }

    private VolumeShape parseTensorShape() {
      String v = VolpoolOptions.INPUT_TENSOR_SHAPE.raw(values);
      if (v == null) {
        return null;
      }
      try {
        int[] d = Arrays.stream(v.split(",")).map(String::trim).mapToInt(Integer::parseInt).toArray();
        return VolumeShape.of(d);
      } catch (IllegalArgumentException e) {
        throw new SettingsException(VolpoolOptions.INPUT_TENSOR_SHAPE.key() + " must be four positive integers C,D,H,W, got '"
            + v + "'");
      }
    }
  }

  private <T> T required(ConfKey<T> k) {
    T v = k.get(values);
    if (v == null) {
      throw new SettingsException("missing required setting " + k.key() + ": " + k.doc());
    }
    return v;
  }

  public String input() {
    return p.input;
  }

  /** Where each volume's rescale comes from: the settings, or the columns they name. */
  public io.volpool.io.InputRescale rescale() {
    return p.rescale;
  }

  public String output() {
    return p.output;
  }

  /** Where bad records are set aside ({@code spark.volpool.badRecords.path}); null: a bad record fails the job. */
  public String badRecordsPath() {
    return p.badRecordsPath;
  }

  public FileFormat inputFormat() {
    return p.inputFormat;
  }

  public FileFormat outputFormat() {
    return p.outputFormat;
  }

  /** The Parquet codec name Spark takes ({@code none} becomes {@code uncompressed}). */
  public String outputCompression() {
    return p.outputCompression.equals("none") ? "uncompressed" : p.outputCompression;
  }

  /** The dtype the output values are stored in ({@link VolpoolOptions#OUTPUT_DTYPE}). */
  public io.volpool.format.Dtype outputDtype() {
    return io.volpool.format.Dtype.valueOf(p.outputDtype.name());
  }

  /** How Parquet output holds volumes (see {@link VolpoolOptions#OUTPUT_LAYOUT}). */
  public OutputLayout outputLayout() {
    return p.outputLayout;
  }

  public String tensorColumn() {
    return p.tensorColumn;
  }

  /** The configured fixed tensor shape, or null. */
  public VolumeShape tensorShape() {
    return p.tensorShape;
  }

  public OutputMode mode() {
    return p.mode;
  }

  public boolean overwrite() {
    return p.mode == OutputMode.OVERWRITE;
  }

  public Device device() {
    return p.executor.device();
  }

  /** Stage names in order; empty for {@code identity}. */
  public List<String> stageNames() {
    return p.stageNames;
  }

  /** True for the settings of {@code Volpool.transform} (no input or output). */
  public boolean isTransform() {
    return forTransform;
  }

  /** The settings as given (for the operators, which read their own keys). */
  public Map<String, String> values() {
    return java.util.Collections.unmodifiableMap(values);
  }

  public int batchSize() {
    return p.executor.batchSize();
  }

  /** What executors work with, parsed as the executor plugin parses it. */
  public io.volpool.conf.ExecutorSettings executor() {
    return p.executor;
  }

  /** CPU threads per executor JVM; 0 means the executor's cores. */
  public int cpuThreads() {
    return p.executor.cpuThreads();
  }

  public double gpuMemoryFraction() {
    return p.executor.gpuMemoryFraction();
  }

  /** Bytes of the pinned pool allocated when an executor (or, in local mode, the job) starts; 0: none. */
  public long gpuPinnedPoolBytes() {
    return p.executor.gpuPinnedPoolBytes();
  }

  public int npyMaxHeaderBytes() {
    return p.executor.npyMaxHeaderBytes();
  }

  public int resourceTimeoutSeconds() {
    return p.resourceTimeoutSeconds;
  }

  public boolean outputSharedFilesystem() {
    return p.outputSharedFilesystem;
  }

  /** Whether a volume across rows larger than a task runs as ranges of its planes in several tasks. */
  public boolean spreadVolumes() {
    return p.spreadVolumes;
  }

  /** The memory budget in bytes; 0 for {@code auto} (half of each executor's heap). */
  public long memoryBudget() {
    return p.executor.memoryBudget();
  }

  /** The most data bytes per output row of a volume stored across rows. */
  public long outputRowBytes() {
    return p.outputRowBytes;
  }

  /** Every effective {@code spark.volpool.*} value (defaults included), for the log and the summary. */
  public Map<String, String> effective() {
    Map<String, String> m = new TreeMap<>();
    for (ConfKey<?> k : Operators.settings()) {
      String v = k.raw(values);
      if (v != null) {
        m.put(k.key(), v);
      }
    }
    return m;
  }
}
