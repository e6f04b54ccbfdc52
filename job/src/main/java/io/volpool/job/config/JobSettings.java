package io.volpool.job.config;

import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.VolumeShape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Typed, validated view of the job's {@code spark.volpool.*} settings, read once on the driver.
 * Precedence, highest first: {@code --conf} flags, then {@code --properties-file} entries, then
 * Spark's defaults file; a key set nowhere takes its default from {@link VolpoolOptions}. Unknown
 * {@code spark.volpool.*} keys are errors (a typo must not silently fall back to a default).
 * Driver-only: executors get the {@link io.volpool.spark.RunSpec} built from it.
 */
public final class JobSettings {
  private final Map<String, String> values;

  private final boolean forTransform;

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
    Set<String> known = VolpoolOptions.ALL.stream().map(ConfKey::key).collect(Collectors.toSet());
    for (String k : values.keySet()) {
      if (VolpoolOptions.RENAMED.containsKey(k)) {
        throw new SettingsException("setting " + k + " no longer exists; use " + VolpoolOptions.RENAMED.get(k));
      }
      if (!known.contains(k)) {
        String near = closest(k);
        throw new SettingsException("unknown setting " + k + (near != null ? "; did you mean " + near + "?"
            : "; known settings: " + VolpoolOptions.ALL.stream().map(ConfKey::key).sorted()
                .collect(Collectors.joining(", "))));
      }
    }
    validate();
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
        out.add("setting " + k + " looks like a volpool setting but is not one (spark.volpool.*); Spark ignores it."
            + " Did you mean spark.volpool." + (dot < 0 ? "" : rest.substring(dot + 1)) + "?");
      }
    }
    return out;
  }

  /** The known key {@code key} most likely meant (same letters in another case, or a few edits away), or null. */
  public static String closest(String key) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (ConfKey k : VolpoolOptions.ALL) {
      if (k.key().equalsIgnoreCase(key)) {
        return k.key();
      }
      int d = distance(key.toLowerCase(Locale.ROOT), k.key().toLowerCase(Locale.ROOT));
      if (d < bestDistance) {
        bestDistance = d;
        best = k.key();
      }
    }
    return bestDistance <= 3 ? best : null;
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

  private void validate() {
    if (!forTransform) {
      input();
      output();
    }
    inputFormat();
    outputFormat();
    mode();
    outputCompression();
    device();
    stageNames();
    if (stageNames().contains("fused")) {
      fusedWeights();
    }
    avgPool();
    batchSize();
    cpuThreads();
    gpuMemoryFraction();
    memoryBudget();
    outputRowBytes();
    outputLayout();
    if (outputLayout().equals("rows") && outputFormat().equals("npy")) {
      throw new SettingsException(VolpoolOptions.OUTPUT_LAYOUT.key() + "=rows needs Parquet output (" + VolpoolOptions.OUTPUT_FORMAT.key()
          + "=parquet): an .npy file holds one array");
    }
    npyMaxHeaderBytes();
    outputSharedFilesystem();
    resourceTimeoutSeconds();
    tensorShape();
    if (outputFormat().equals("npy") && !inputFormat().equals("npy")) {
      throw new SettingsException(VolpoolOptions.OUTPUT_FORMAT.key() + "=npy needs " + VolpoolOptions.INPUT_FORMAT.key()
          + "=npy (one output file per input file), got input.format=" + inputFormat());
    }
  }

  private String raw(ConfKey k) {
    String v = values.get(k.key());
    return v == null || v.isEmpty() ? k.defaultValue() : v;
  }

  private String required(ConfKey k) {
    String v = raw(k);
    if (v == null) {
      throw new SettingsException("missing required setting " + k.key() + ": " + k.doc());
    }
    return v;
  }

  private String oneOf(ConfKey k, String... allowed) {
    String v = raw(k).toLowerCase(Locale.ROOT);
    if (!Arrays.asList(allowed).contains(v)) {
      throw new SettingsException(k.key() + " must be one of " + String.join(", ", allowed) + ", got '" + raw(k) + "'");
    }
    return v;
  }

  private int integer(ConfKey k, int min) {
    return integer(k, min, Integer.MAX_VALUE);
  }

  private int integer(ConfKey k, int min, int max) {
    String v = raw(k);
    int i;
    try {
      i = Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new SettingsException(k.key() + " must be an integer, got '" + v + "'");
    }
    if (i < min) {
      throw new SettingsException(k.key() + " must be at least " + min + ", got " + i);
    }
    if (i > max) {
      throw new SettingsException(k.key() + " must be at most " + max + ", got " + i);
    }
    return i;
  }

  private OptionalInt optionalInt(ConfKey k, int min) {
    return raw(k) == null ? OptionalInt.empty() : OptionalInt.of(integer(k, min));
  }

  private boolean bool(ConfKey k) {
    String v = raw(k).toLowerCase(Locale.ROOT);
    if (!v.equals("true") && !v.equals("false")) {
      throw new SettingsException(k.key() + " must be true or false, got '" + raw(k) + "'");
    }
    return v.equals("true");
  }

  public String input() {
    return required(VolpoolOptions.INPUT);
  }

  public String output() {
    return required(VolpoolOptions.OUTPUT);
  }

  public String inputFormat() {
    return oneOf(VolpoolOptions.INPUT_FORMAT, "parquet", "npy");
  }

  public String outputFormat() {
    return raw(VolpoolOptions.OUTPUT_FORMAT) == null ? inputFormat() : oneOf(VolpoolOptions.OUTPUT_FORMAT, "parquet", "npy");
  }

  /** The Parquet codec name Spark takes ({@code none} becomes {@code uncompressed}). */
  public String outputCompression() {
    String c = oneOf(VolpoolOptions.OUTPUT_COMPRESSION, "none", "snappy", "zstd", "gzip", "lz4");
    return c.equals("none") ? "uncompressed" : c;
  }

  /** {@code auto}, {@code rows} or {@code volume}: how Parquet output holds volumes (see {@link VolpoolOptions#OUTPUT_LAYOUT}). */
  public String outputLayout() {
    return oneOf(VolpoolOptions.OUTPUT_LAYOUT, "auto", "rows", "volume");
  }

  public String tensorColumn() {
    return raw(VolpoolOptions.INPUT_TENSOR_COLUMN);
  }

  /** The configured fixed tensor shape, or null. */
  public VolumeShape tensorShape() {
    String v = raw(VolpoolOptions.INPUT_TENSOR_SHAPE);
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

  public boolean overwrite() {
    return mode().equals("overwrite");
  }

  private String mode() {
    return oneOf(VolpoolOptions.MODE, "errorifexists", "overwrite");
  }

  public String device() {
    return oneOf(VolpoolOptions.DEVICE, "auto", "cpu", "gpu");
  }

  /** Stage names in order; empty for {@code identity}. */
  public List<String> stageNames() {
    String v = raw(VolpoolOptions.PIPELINE);
    List<String> out = new ArrayList<>();
    for (String s : v.split(",")) {
      String t = s.trim().toLowerCase(Locale.ROOT);
      if (t.isEmpty()) {
        continue;
      }
      if (!t.equals("fused") && !t.equals("avgpool3d") && !t.equals("identity")) {
        throw new SettingsException(VolpoolOptions.PIPELINE.key() + " takes a comma list of fused, avgpool3d (or identity alone),"
            + " got '" + v + "' (unknown stage '" + s.trim() + "')");
      }
      out.add(t);
    }
    if (out.isEmpty()) {
      throw new SettingsException(VolpoolOptions.PIPELINE.key() + " is empty; use identity to copy tensors through");
    }
    if (out.contains("identity")) {
      if (out.size() > 1) {
        throw new SettingsException(VolpoolOptions.PIPELINE.key() + "=identity cannot be combined with other stages, got '"
            + v + "'");
      }
      return List.of();
    }
    return out;
  }

  public String fusedWeights() {
    String v = raw(VolpoolOptions.FUSED_WEIGHTS);
    if (v == null) {
      throw new SettingsException("missing setting " + VolpoolOptions.FUSED_WEIGHTS.key() + ": the pipeline '"
          + raw(VolpoolOptions.PIPELINE) + "' has a fused stage, which needs the model's safetensors file");
    }
    return v;
  }

  public io.volpool.op.FusedModel.Params fusedParams() {
    return new io.volpool.op.FusedModel.Params(optionalInt(VolpoolOptions.FUSED_STRIDE, 1),
        optionalInt(VolpoolOptions.FUSED_PADDING, 0), optionalInt(VolpoolOptions.FUSED_OUTPUT_PADDING, 0),
        optionalInt(VolpoolOptions.FUSED_POOL_KERNEL, 1));
  }

  public AvgPool3dSpec avgPool() {
    try {
      return new AvgPool3dSpec(integer(VolpoolOptions.AVGPOOL_KERNEL, 1), integer(VolpoolOptions.AVGPOOL_STRIDE, 1),
          integer(VolpoolOptions.AVGPOOL_PADDING, 0), bool(VolpoolOptions.AVGPOOL_CEIL),
          bool(VolpoolOptions.AVGPOOL_COUNT_PAD));
    } catch (SettingsException e) {
      throw e;
    } catch (IllegalArgumentException e) {
      throw new SettingsException("spark.volpool.avgpool3d.*: " + e.getMessage(), e);
    }
  }

  public int batchSize() {
    return integer(VolpoolOptions.BATCH_SIZE, 0, 1 << 20);
  }

  /** CPU threads per executor JVM; 0 means the executor's cores. */
  public int cpuThreads() {
    return integer(VolpoolOptions.CPU_THREADS, 0, 4096);
  }

  public double gpuMemoryFraction() {
    String v = raw(VolpoolOptions.GPU_MEMORY_FRACTION);
    double d;
    try {
      d = Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw new SettingsException(VolpoolOptions.GPU_MEMORY_FRACTION.key() + " must be a number, got '" + v + "'");
    }
    if (!(d > 0.01 && d <= 0.95)) {
      throw new SettingsException(VolpoolOptions.GPU_MEMORY_FRACTION.key() + " must be between 0.01 and 0.95, got " + v);
    }
    return d;
  }

  public int npyMaxHeaderBytes() {
    return integer(VolpoolOptions.NPY_MAX_HEADER, 128, 1 << 30);
  }

  public int resourceTimeoutSeconds() {
    return integer(VolpoolOptions.RESOURCE_TIMEOUT, 5, 86400);
  }

  public boolean outputSharedFilesystem() {
    return bool(VolpoolOptions.OUTPUT_SHARED_FS);
  }

  /** The memory budget in bytes; 0 for {@code auto} (half of each executor's heap). */
  public long memoryBudget() {
    String v = raw(VolpoolOptions.MEMORY_BUDGET).trim().toLowerCase(Locale.ROOT);
    if (v.equals("auto")) {
      return 0;
    }
    long bytes = parseBytes(v);
    if (bytes < (16L << 20)) {
      throw new SettingsException(VolpoolOptions.MEMORY_BUDGET.key() + " must be auto or at least 16m, got '"
          + raw(VolpoolOptions.MEMORY_BUDGET) + "'");
    }
    return bytes;
  }

  /** The most data bytes per output row of a volume stored across rows. */
  public long outputRowBytes() {
    String v = raw(VolpoolOptions.OUTPUT_ROW_BYTES).trim().toLowerCase(Locale.ROOT);
    long bytes = parseBytes(v, VolpoolOptions.OUTPUT_ROW_BYTES, "");
    if (bytes < (1L << 20) || bytes > (1L << 31) - (1L << 20)) {
      throw new SettingsException(VolpoolOptions.OUTPUT_ROW_BYTES.key() + " must be between 1m and 2047m (a Parquet page"
          + " holds at most 2 GiB), got '" + raw(VolpoolOptions.OUTPUT_ROW_BYTES) + "'");
    }
    return bytes;
  }

  private static long parseBytes(String v) {
    return parseBytes(v, VolpoolOptions.MEMORY_BUDGET, "auto or ");
  }

  private static long parseBytes(String v, ConfKey key, String alternatives) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)\\s*([kmgt]?)(i?b)?").matcher(v);
    if (!m.matches()) {
      throw new SettingsException(key.key() + " must be " + alternatives + "a size such as 512m, 6g or"
          + " 6442450944, got '" + v + "'");
    }
    int shift = switch (m.group(2)) {
      case "k" -> 10;
      case "m" -> 20;
      case "g" -> 30;
      case "t" -> 40;
      default -> 0;
    };
    try {
      return Math.multiplyExact(Long.parseLong(m.group(1)), 1L << shift);
    } catch (ArithmeticException | NumberFormatException e) {
      throw new SettingsException(key.key() + " is too large: '" + v + "'");
    }
  }

  /** Every effective {@code spark.volpool.*} value (defaults included), for the log and the summary. */
  public Map<String, String> effective() {
    Map<String, String> m = new TreeMap<>();
    for (ConfKey k : VolpoolOptions.ALL) {
      String v = raw(k);
      if (v != null) {
        m.put(k.key(), v);
      }
    }
    return m;
  }
}
