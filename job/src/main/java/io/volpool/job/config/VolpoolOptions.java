package io.volpool.job.config;

import java.util.List;

/**
 * Every {@code spark.volpool.*} key, declared once with its default and a one-line description.
 * The README's settings table is {@link #markdownTable()}; a test keeps the two equal. Typed
 * access and validation live in {@link JobSettings}.
 */
public final class VolpoolOptions {
  private VolpoolOptions() {}

  public static final String PREFIX = "spark.volpool.";

  public static final ConfKey INPUT = new ConfKey(PREFIX + "input", null,
      "Input path: a Parquet file or directory, or an .npy file or directory (searched recursively). Required.");
  public static final ConfKey INPUT_FORMAT = new ConfKey(PREFIX + "input.format", "parquet",
      "`parquet` (one volume per row) or `npy` (one volume `[C,D,H,W]` or a batch `[N,C,D,H,W]` per file).");
  public static final ConfKey INPUT_TENSOR_COLUMN = new ConfKey(PREFIX + "input.tensorColumn", null,
      "Parquet column holding `array<float>` tensors (pyarrow `arrow.fixed_shape_tensor`); unset: binary `data` column, else the only `array<float>` column.");
  public static final ConfKey INPUT_TENSOR_SHAPE = new ConfKey(PREFIX + "input.tensorShape", null,
      "`C,D,H,W` of every tensor in the tensor column; unset: read from the file's `ARROW:schema` metadata.");
  public static final ConfKey OUTPUT = new ConfKey(PREFIX + "output", null,
      "Output directory. Required.");
  public static final ConfKey OUTPUT_FORMAT = new ConfKey(PREFIX + "output.format", null,
      "`parquet` or `npy`; unset: the input format. `npy` output needs `npy` input (one output file per input file).");
  public static final ConfKey OUTPUT_COMPRESSION = new ConfKey(PREFIX + "output.compression", "none",
      "Parquet output codec: `none`, `snappy`, `zstd`, `gzip` or `lz4`. Random-looking floats barely compress, and a"
          + " codec holds a whole tensor page (512 MiB for a large volume) several times in memory.");
  public static final ConfKey OUTPUT_LAYOUT = new ConfKey(PREFIX + "output.layout", "auto",
      "Parquet output: `volume` (one row per volume), `rows` (volumes stored across rows: `d0`/`d1` columns, a volume"
          + " larger than `output.rowBytes` in several rows), or `auto` (`rows` when the input is stored across rows, else"
          + " `volume`).");
  public static final ConfKey OUTPUT_ROW_BYTES = new ConfKey(PREFIX + "output.rowBytes", "512m",
      "With output stored across rows, the most data per row (whole planes; at least one plane per row).");
  public static final ConfKey MODE = new ConfKey(PREFIX + "mode", "errorifexists",
      "`errorifexists` (fail if the output exists) or `overwrite` (replace it).");
  public static final ConfKey PIPELINE = new ConfKey(PREFIX + "pipeline", "fused,avgpool3d",
      "Comma list of `fused`, `avgpool3d`; `identity` copies tensors through (I/O benchmarks).");
  public static final ConfKey FUSED_WEIGHTS = new ConfKey(PREFIX + "fused.weights", null,
      "safetensors file of the fused model's PyTorch `state_dict`. Required when the pipeline has `fused`.");
  public static final ConfKey FUSED_STRIDE = new ConfKey(PREFIX + "fused.stride", null,
      "ConvTranspose3d stride; unset: the model's `__metadata__`, else 2.");
  public static final ConfKey FUSED_PADDING = new ConfKey(PREFIX + "fused.padding", null,
      "ConvTranspose3d padding; unset: the model's `__metadata__`, else 1.");
  public static final ConfKey FUSED_OUTPUT_PADDING = new ConfKey(PREFIX + "fused.outputPadding", null,
      "ConvTranspose3d output_padding; unset: the model's `__metadata__`, else 0.");
  public static final ConfKey FUSED_POOL_KERNEL = new ConfKey(PREFIX + "fused.poolKernel", null,
      "AvgPool3d kernel (= stride) inside `fused`; unset: the model's `__metadata__`, else 2.");
  public static final ConfKey AVGPOOL_KERNEL = new ConfKey(PREFIX + "avgpool3d.kernelSize", "3",
      "AvgPool3d kernel_size.");
  public static final ConfKey AVGPOOL_STRIDE = new ConfKey(PREFIX + "avgpool3d.stride", "2",
      "AvgPool3d stride.");
  public static final ConfKey AVGPOOL_PADDING = new ConfKey(PREFIX + "avgpool3d.padding", "1",
      "AvgPool3d padding (at most half the kernel).");
  public static final ConfKey AVGPOOL_CEIL = new ConfKey(PREFIX + "avgpool3d.ceilMode", "false",
      "AvgPool3d ceil_mode.");
  public static final ConfKey AVGPOOL_COUNT_PAD = new ConfKey(PREFIX + "avgpool3d.countIncludePad", "true",
      "AvgPool3d count_include_pad.");
  public static final ConfKey DEVICE = new ConfKey(PREFIX + "device", "auto",
      "`auto` (GPU when CUDA works, else CPU, logging why), `cpu`, or `gpu` (fail if no usable GPU).");
  public static final ConfKey BATCH_SIZE = new ConfKey(PREFIX + "batchSize", "0",
      "Volumes per backend call; 0 chooses from the volume size (and free GPU memory).");
  public static final ConfKey CPU_THREADS = new ConfKey(PREFIX + "cpu.threads", "0",
      "Threads of the CPU backend's shared pool per executor JVM; 0 = the executor's cores (`local[N]`: N;"
          + " a cluster: `spark.executor.cores`, else the cores the executor's JVM sees).");
  public static final ConfKey GPU_MEMORY_FRACTION = new ConfKey(PREFIX + "gpu.memoryFraction", "0.6",
      "Share of each GPU's free memory (when the executor first uses it) that batches may take: each batch in flight"
          + " holds its own device buffers and CUDA stream, and tasks wait for device memory instead of failing.");
  public static final ConfKey MEMORY_BUDGET = new ConfKey(PREFIX + "memory.budget", "auto",
      "Host memory per executor for volume data in flight (batch buffers, pinned on the GPU; input pages that cannot"
          + " be streamed), e.g. `6g`; tasks wait for room. `auto`: half of the executor's heap. One request (a batch,"
          + " a page) may take at most half. On YARN or Kubernetes add the budget to `spark.executor.memoryOverhead`"
          + " when the GPU is used (pinned memory is off-heap).");
  public static final ConfKey NPY_MAX_HEADER = new ConfKey(PREFIX + "input.npy.maxHeaderBytes", "10000",
      "Largest .npy header accepted (numpy's `max_header_size`); larger headers are bad records.");
  public static final ConfKey RESOURCE_TIMEOUT = new ConfKey(PREFIX + "cluster.resourceTimeout", "180",
      "Seconds a job on a cluster waits for its first task to start (an executor with the requested resources) before"
          + " it fails saying what it asked for and what the cluster offered.");
  public static final ConfKey OUTPUT_SHARED_FS = new ConfKey(PREFIX + "output.sharedFilesystem", "false",
      "`true` allows a `file:` output on a cluster master (only when that path is one shared filesystem on every"
          + " host, e.g. NFS); otherwise such an output is refused, since executors would write to their own disks.");

  public static final List<ConfKey> ALL = List.of(INPUT, INPUT_FORMAT, INPUT_TENSOR_COLUMN, INPUT_TENSOR_SHAPE, OUTPUT,
      OUTPUT_FORMAT, OUTPUT_COMPRESSION, OUTPUT_LAYOUT, OUTPUT_ROW_BYTES, MODE, PIPELINE, FUSED_WEIGHTS, FUSED_STRIDE, FUSED_PADDING, FUSED_OUTPUT_PADDING, FUSED_POOL_KERNEL,
      AVGPOOL_KERNEL, AVGPOOL_STRIDE, AVGPOOL_PADDING, AVGPOOL_CEIL, AVGPOOL_COUNT_PAD, DEVICE, BATCH_SIZE, CPU_THREADS,
      GPU_MEMORY_FRACTION, MEMORY_BUDGET, NPY_MAX_HEADER, OUTPUT_SHARED_FS, RESOURCE_TIMEOUT);

  /** Keys of earlier versions, with what replaced them (named in the error a stale key gets). */
  public static final java.util.Map<String, String> RENAMED = java.util.Map.of(
      PREFIX + "gpu.tasksPerDevice", GPU_MEMORY_FRACTION.key() + " (a task no longer holds the GPU for its whole"
          + " partition; batches share the device, bounded by its memory)");

  /** The README's settings table. */
  public static String markdownTable() {
    StringBuilder sb = new StringBuilder("| key | default | meaning |\n| --- | --- | --- |\n");
    for (ConfKey k : ALL) {
      sb.append(k.markdownRow()).append('\n');
    }
    return sb.toString();
  }
}
