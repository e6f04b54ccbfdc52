package io.volpool.conf;

import java.util.List;

/**
 * The job's {@code spark.volpool.*} settings, each declared once with its type, default, check and
 * one-line description ({@link ConfKey}), as spark-rapids' {@code RapidsConf} does; each operator
 * declares its own in its package, and {@code io.volpool.ops.Operators#settings()} is the full list.
 * Everything that reads a setting or names one in a message goes through these declarations: no
 * key is spelled anywhere else (a test scans the sources). The README's settings table is
 * generated from the full list; a test keeps the two equal. Cross-setting rules and the job's
 * typed view live in the job's {@code JobSettings}.
 *
 * <p>Naming: {@code spark.volpool.<area>.<name>} in camelCase ({@code input.*}, {@code output.*},
 * {@code batch.*}, {@code cpu.*}, {@code gpu.*}, {@code memory.*}, {@code cluster.*}), except the two
 * choices every job makes, {@code pipeline} and {@code device}; an operator's parameters are
 * {@code spark.volpool.<operator>.<PyTorch's parameter name in camelCase>}; sizes take units
 * ({@code 512m}) and durations too ({@code 180s}). Keys renamed to fit this are still read under
 * their old names with a warning ({@link ConfKey#formerly}).
 */
public final class VolpoolOptions {
  private VolpoolOptions() {}

  public static final String PREFIX = "spark.volpool.";
  /** Every key below, added as it is declared. */
  private static final ConfKey.Declared KEYS = new ConfKey.Declared();

  public static final ConfKey<String> INPUT = KEYS.add(ConfKey.text(PREFIX + "input", null,
      "Input path: a Parquet file or directory, or an .npy file or directory (searched recursively). Required."));
  public static final ConfKey<FileFormat> INPUT_FORMAT = KEYS.add(ConfKey.option(PREFIX + "input.format", FileFormat.PARQUET,
      FileFormat.class, "`parquet` (one volume per row) or `npy` (one volume `[C,D,H,W]` or a batch `[N,C,D,H,W]` per file)."));
  public static final ConfKey<String> INPUT_TENSOR_COLUMN = KEYS.add(ConfKey.text(PREFIX + "input.tensorColumn", null,
      "Parquet column holding tensors as lists of numbers (pyarrow `arrow.fixed_shape_tensor` of float, double,"
          + " halffloat, int8, uint8, int16, uint16 or int32); unset: binary `data` column, else the only such list column."));
  public static final ConfKey<String> INPUT_TENSOR_SHAPE = KEYS.add(ConfKey.text(PREFIX + "input.tensorShape", null,
      "`C,D,H,W` of every tensor in the tensor column; unset: read from the file's `ARROW:schema` metadata."));
  public static final ConfKey<Double> INPUT_RESCALE_SLOPE = KEYS.add(ConfKey.of(PREFIX + "input.rescale.slope", "1",
      "Each stored value becomes `value * slope + intercept` (float32) before the pipeline: DICOM's RescaleSlope, NIfTI's"
          + " scl_slope. A finite number.", VolpoolOptions::finite));
  public static final ConfKey<Double> INPUT_RESCALE_INTERCEPT = KEYS.add(ConfKey.of(PREFIX + "input.rescale.intercept", "0",
      "Added after the slope: DICOM's RescaleIntercept, NIfTI's scl_inter. A finite number.", VolpoolOptions::finite));
  public static final ConfKey<String> INPUT_RESCALE_SLOPE_COLUMN = KEYS.add(ConfKey.text(PREFIX + "input.rescale.slopeColumn",
      null, "Parquet input: the numeric column holding each row's slope, instead of `input.rescale.slope`; a null is a bad"
          + " record."));
  public static final ConfKey<String> INPUT_RESCALE_INTERCEPT_COLUMN = KEYS.add(ConfKey.text(
      PREFIX + "input.rescale.interceptColumn", null, "Parquet input: the numeric column holding each row's intercept,"
          + " instead of `input.rescale.intercept`; a null is a bad record."));
  public static final ConfKey<String> OUTPUT = KEYS.add(ConfKey.text(PREFIX + "output", null,
      "Output directory. Required."));
  public static final ConfKey<FileFormat> OUTPUT_FORMAT = KEYS.add(ConfKey.option(PREFIX + "output.format", null, FileFormat.class,
      "`parquet` or `npy`; unset: the input format. `npy` output needs `npy` input (one output file per input"
          + " file) or Parquet input of volumes stored across rows (one `<id>.npy` per volume)."));
  public static final ConfKey<String> OUTPUT_COMPRESSION = KEYS.add(ConfKey.choice(PREFIX + "output.compression", "none",
      "Parquet output codec: `none`, `snappy`, `zstd`, `gzip` or `lz4`. Random-looking floats barely compress, and a"
          + " codec holds a whole tensor page (512 MiB for a large volume) several times in memory.", "none", "snappy", "zstd", "gzip", "lz4"));
  public static final ConfKey<OutputDtype> OUTPUT_DTYPE = KEYS.add(ConfKey.option(PREFIX + "output.dtype", OutputDtype.FLOAT32,
      OutputDtype.class, "`float32`, `float16` or `bfloat16`: the dtype of the output values. The kernels compute in float32 and"
          + " round to nearest even on the device before the copy back, as PyTorch's `.to(torch.float16)` (beyond 65504 a"
          + " float16 is infinite); the `dtype` column says it, `.npy` output is `<f2`. bfloat16 has no numpy dtype: Parquet"
          + " output only."));
  public static final ConfKey<OutputLayout> OUTPUT_LAYOUT = KEYS.add(ConfKey.option(PREFIX + "output.layout", OutputLayout.AUTO,
      OutputLayout.class, "Parquet output: `volume` (one row per volume), `rows` (volumes stored across rows: `d0`/`d1` columns, a volume"
          + " larger than `output.rowBytes` in several rows), or `auto` (`rows` when the input is stored across rows, else"
          + " `volume`)."));
  public static final ConfKey<Long> OUTPUT_ROW_BYTES = KEYS.add(ConfKey.bytes(PREFIX + "output.rowBytes",
      "512m", 1L << 20, (1L << 31) - (1L << 20), false,
      "between 1m and 2047m (a Parquet page holds at most 2 GiB)",
      "With output stored across rows, the most data per row (whole planes; at least one plane per row)."));
  public static final ConfKey<OutputMode> MODE = KEYS.add(ConfKey.option(PREFIX + "output.mode", OutputMode.ERRORIFEXISTS,
      OutputMode.class, "`errorifexists` (fail if the output exists), `overwrite` (replace it), `resume` (keep the"
          + " committed tasks of a failed or killed run of the same settings and input, run the rest) or `append` (process"
          + " the input files the output's manifest does not list, and add their results).")
      .formerly(PREFIX + "mode"));
  public static final ConfKey<Device> DEVICE = KEYS.add(ConfKey.option(PREFIX + "device", Device.AUTO, Device.class,
      "`auto` (GPU when CUDA works, else CPU, logging why), `cpu`, or `gpu` (fail if no usable GPU)."));
  public static final ConfKey<Integer> BATCH_SIZE = KEYS.add(ConfKey.integer(PREFIX + "batch.size", "0", 0, 1 << 20,
      "Volumes per backend call; 0 chooses from the volume size (and free GPU memory).").formerly(PREFIX + "batchSize"));
  public static final ConfKey<Integer> CPU_THREADS = KEYS.add(ConfKey.integer(PREFIX + "cpu.threads", "0", 0, 4096,
      "Threads of the CPU backend's shared pool per executor JVM; 0 = the executor's cores (`local[N]`: N;"
          + " a cluster: `spark.executor.cores`, else the cores the executor's JVM sees)."));
  public static final ConfKey<Double> GPU_MEMORY_FRACTION = KEYS.add(ConfKey.decimal(PREFIX + "gpu.memoryFraction", "0.6", 0.01, 0.95,
      "Share of each GPU's free memory (when the executor first uses it) that batches may take: each batch in flight"
          + " holds its own device buffers and CUDA stream, and tasks wait for device memory instead of failing."));
  /** Bytes of one allocation of the pinned pool ({@link #GPU_PINNED_POOL}); why this size: {@code CudaBackend.POOL_CHUNK}. */
  public static final long GPU_PINNED_POOL_CHUNK = 128L << 20;
  public static final ConfKey<Long> GPU_PINNED_POOL = KEYS.add(ConfKey.bytes(PREFIX + "gpu.pinnedPool.size", "0", 0, Long.MAX_VALUE, false,
      "a size, 0 for none", "Pinned host memory each executor allocates once when it starts (with volpool's executor"
          + " plugin in `spark.plugins`, see \"Warm executors\"; in local mode when the job starts), beside opening its GPUs"
          + " and loading the kernels, so the first tasks do not wait for `cuMemHostAlloc` (milliseconds per block);"
          + " batches carve their staging buffers from it and the memory budget still bounds what they hold, so at most"
          + " the budget is useful, e.g. `4g`. It is allocated in chunks of"
              + " " + (GPU_PINNED_POOL_CHUNK >> 20) + " MiB, each used as soon as it exists; a batch"
          + " whose buffers are larger than a chunk allocates them on its own. 0: none, each block is allocated when first"
          + " needed. Off-heap: add it to"
          + " `spark.executor.memoryOverhead`."));
  public static final ConfKey<Long> MEMORY_BUDGET = KEYS.add(ConfKey.bytes(PREFIX + "memory.budget", "auto",
      16L << 20, Long.MAX_VALUE, true, "auto or at least 16m",
      "Host memory per executor for volume data in flight (batch buffers, pinned on the GPU; input pages that cannot"
          + " be streamed), e.g. `6g`; tasks wait for room. `auto`: half of the executor's heap. One request (a batch,"
          + " a page) may take at most half. On YARN or Kubernetes add the budget to `spark.executor.memoryOverhead`"
          + " when the GPU is used (pinned memory is off-heap)."));
  public static final ConfKey<Long> NPY_MAX_HEADER = KEYS.add(ConfKey.bytes(PREFIX + "input.npy.maxHeaderSize", "10000", 128, 1 << 30, false,
      "between 128 and 1g", "Largest .npy header accepted (numpy's `max_header_size`), e.g. `10000` or `64k`; larger headers"
          + " are bad records.").formerly(PREFIX + "input.npy.maxHeaderBytes"));
  public static final ConfKey<Boolean> OUTPUT_SHARED_FS = KEYS.add(ConfKey.bool(PREFIX + "output.sharedFilesystem", "false",
      "`true` allows a `file:` output on a cluster master (only when that path is one shared filesystem on every"
          + " host, e.g. NFS); otherwise such an output is refused, since executors would write to their own disks."));
  public static final ConfKey<Boolean> SPREAD_VOLUMES = KEYS.add(ConfKey.bool(PREFIX + "input.spreadVolumes", "true",
      "`true`: a volume stored across rows, or in a C-order `.npy`, that is larger than a task"
          + " (`spark.sql.files.maxPartitionBytes`) runs as ranges of its output planes in several tasks (Parquet output"
          + " across rows, or `.npy` output on a local or shared filesystem or HDFS); `false`: each volume in one task."));
  public static final ConfKey<String> BAD_RECORDS_PATH = KEYS.add(ConfKey.text(PREFIX + "badRecords.path", null,
      "A folder for bad records (Spark's `badRecordsPath`): set, a record that breaks a rule (shape, dtype, data length,"
          + " a null rescale, a shape the pipeline cannot take) is written to `<path>/<run id>/bad_records.json` with its"
          + " id, file, row and rule, and the job completes with the others and exits 5; unset, the first fails the job"
          + " (exit 3). Volumes one per Parquet row and `.npy` files; not volumes stored across rows."));
  public static final ConfKey<Integer> RESOURCE_TIMEOUT = KEYS.add(ConfKey.seconds(PREFIX + "cluster.resourceTimeout", "180s", 5, 86400,
      "How long (e.g. `180s`, `10m`; a bare number is seconds) a job on a cluster waits for its first task to"
          + " start (an executor with the requested resources) before"
          + " it fails saying what it asked for and what the cluster offered."));

  /** Every key above, in declaration order. */
  public static final List<ConfKey<?>> ALL = KEYS.all();

  /** Keys of earlier versions, with what replaced them (named in the error a stale key gets). */
  public static final java.util.Map<String, String> RENAMED = java.util.Map.of(
      PREFIX + "gpu.tasksPerDevice", GPU_MEMORY_FRACTION.key() + " (a task no longer holds the GPU for its whole"
          + " partition; batches share the device, bounded by its memory)");

  private static Double finite(String key, String v) {
    double d;
    try {
      d = Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw new SettingsException(key + " must be a number, got '" + v + "'");
    }
    if (!Float.isFinite((float) d)) {
      throw new SettingsException(key + " must be a finite float32 number, got '" + v + "'");
    }
    return d;
  }
}
