package io.volpool.bench;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuGraphDestroy;
import static jcuda.driver.JCudaDriver.cuGraphExecDestroy;
import static jcuda.driver.JCudaDriver.cuGraphInstantiate;
import static jcuda.driver.JCudaDriver.cuGraphLaunch;
import static jcuda.driver.JCudaDriver.cuStreamBeginCapture;
import static jcuda.driver.JCudaDriver.cuStreamEndCapture;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.volpool.backend.Batch;
import io.volpool.backend.BatchExecutor;
import io.volpool.cpu.CpuBackend;
import io.volpool.cuda.Cuda;
import io.volpool.cuda.CudaBackend;
import io.volpool.cuda.KernelPlan;
import io.volpool.cuda.KernelRunner;
import io.volpool.format.SafeTensors;
import io.volpool.format.ValueType;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.fused.FusedModel;
import io.volpool.ops.fused.FusedOp;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * GPU benchmarks of volpool's kernels and host loop, in the same shapes as
 * {@code ../shared/bench/torch_anchors.py}: device copy bandwidth (the ceiling), fused on a batch
 * of 128 reference volumes, avgpool3d on {@code [16,32,128,128,256]}, the pipeline kernel, and
 * pinned host-to-device-to-host volumes/s from Java. Kernel times are CUDA-event medians of CUDA
 * graph replays (device time alone; {@code *_stream_ms} adds JCuda's launch cost), after warm-up,
 * rotating inputs so L2 does not serve them. Each kernel's output is checked against the
 * CPU backend before it is timed. Usage: {@code GpuBench MODEL.safetensors [--json FILE]}.
 */
public final class GpuBench {
  private static final VolumeShape REF = new VolumeShape(3, 16, 32, 32);
  private static final AvgPool3dSpec POOL = new AvgPool3dSpec(3, 2, 1, false, true);
  private static final io.volpool.ops.maxpool3d.MaxPool3dSpec MAX_POOL = new io.volpool.ops.maxpool3d.MaxPool3dSpec(3, 2, 1,
      1, false);

  private final CudaBackend gpu;
  private final CUstream stream = new CUstream();
  private final Map<String, Object> results = new LinkedHashMap<>();
  private final List<CUdeviceptr> allocated = new ArrayList<>();

  private GpuBench(CudaBackend gpu) {
    this.gpu = gpu;
    gpu.makeCurrent(0);
    Cuda.check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: GpuBench MODEL.safetensors [--json FILE] [--batch 128]");
      System.exit(2);
    }
    String json = null;
    int batch = 128;
    String only = "copy,fused,pipeline,two,avgpool,host";
    for (int i = 1; i < args.length; i++) {
      if (args[i].equals("--json")) {
        json = args[++i];
      } else if (args[i].equals("--batch")) {
        batch = Integer.parseInt(args[++i]);
      } else if (args[i].equals("--only")) {
        only = args[++i];
      }
    }
    FusedOp fused = FusedModel.load(SafeTensors.read(Files.readAllBytes(Paths.get(args[0])), args[0]),
        new FusedModel.Params(OptionalInt.of(2), OptionalInt.of(1), OptionalInt.of(0), OptionalInt.of(2)));
    try (CudaBackend gpu = CudaBackend.create(0.5)) {
      GpuBench b = new GpuBench(gpu);
      b.results.put("device", gpu.name(0));
      java.util.Set<String> run = java.util.Set.of(only.split(","));
      double bw = run.contains("copy") ? b.copyBandwidth() : 4.2e12;
      b.results.put("d2d_copy_GBps", bw / 1e9);
      if (run.contains("fused")) {
        b.kernel("fused", KernelPlan.of(Pipeline.of(fused), REF), batch, bw);
      }
      if (run.contains("pipeline")) {
        b.kernel("pipeline", KernelPlan.of(Pipeline.of(fused, POOL), REF), batch, bw);
      }
      if (run.contains("two")) {
        b.kernel("fused_then_avgpool_two_kernels", KernelPlan.of(Pipeline.of(fused, POOL), REF, false), batch, bw);
      }
      if (run.contains("avgpool")) {
        b.kernel("avgpool", KernelPlan.of(Pipeline.of(POOL), new VolumeShape(32, 128, 128, 256)), 16, bw);
      }
      if (run.contains("maxpool")) {
        b.kernel("maxpool", KernelPlan.of(Pipeline.of(MAX_POOL), new VolumeShape(32, 128, 128, 256)), 16, bw);
      }
      if (run.contains("fused_maxpool")) {
        b.kernel("fused_maxpool", KernelPlan.of(Pipeline.of(fused, MAX_POOL), REF), batch, bw);
        b.kernel("fused_maxpool_two_kernels", KernelPlan.of(Pipeline.of(fused, MAX_POOL), REF, false), batch, bw);
      }
      // the pools on stored 8- and 16-bit values, widened in the kernels' loads (--only dtypes)
      if (run.contains("dtypes")) {
        VolumeShape big = new VolumeShape(32, 128, 128, 256);
        for (String t : new String[] {"int16", "float16", "uint8"}) {
          ValueType vt = ValueType.parse(t);
          b.kernel("avgpool_" + t, KernelPlan.of(Pipeline.of(POOL), big, vt), 16, bw);
          b.kernel("maxpool_" + t, KernelPlan.of(Pipeline.of(MAX_POOL), big, vt), 16, bw);
        }
      }
      if (run.contains("host")) {
        b.hostLoop(Pipeline.of(fused, POOL), 256, false);
        b.hostLoop(Pipeline.of(fused, POOL), 256, true);
      }
      b.freeAll();
      StringBuilder sb = new StringBuilder("{\n");
      int k = 0;
      for (Map.Entry<String, Object> e : b.results.entrySet()) {
        Object v = e.getValue();
        sb.append("  \"").append(e.getKey()).append("\": ")
            .append(v instanceof String ? "\"" + v + "\"" : v).append(++k < b.results.size() ? ",\n" : "\n");
        System.out.println(e.getKey() + ": " + (v instanceof Double d ? String.format("%.4g", d) : v));
      }
      sb.append("}\n");
      if (json != null) {
        Files.writeString(Paths.get(json), sb.toString());
      }
    }
  }

  private CUdeviceptr alloc(long bytes) {
    CUdeviceptr p = new CUdeviceptr();
    Cuda.check(cuMemAlloc(p, bytes), "cuMemAlloc(" + bytes + ")");
    allocated.add(p);
    return p;
  }

  private void freeAll() {
    for (CUdeviceptr p : allocated) {
      Cuda.check(cuMemFree(p), "cuMemFree");
    }
    allocated.clear();
  }

  private void free(CUdeviceptr p) {
    Cuda.check(cuMemFree(p), "cuMemFree");
    allocated.remove(p);
  }

  /** Fills {@code bytes} of device memory with uniform [0,1) floats (a 64 MiB random block repeated). */
  private void fillRandom(CUdeviceptr p, long bytes, long seed) {
    int block = (int) Math.min(bytes, 64L << 20);
    float[] h = new float[block / 4];
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < h.length; i++) {
      h[i] = (float) r.nextDouble();
    }
    for (long off = 0; off < bytes; off += block) {
      long n = Math.min(block, bytes - off);
      Cuda.check(cuMemcpyHtoD(p.withByteOffset(off), Pointer.to(h), n), "cuMemcpyHtoD(fill)");
    }
  }

  interface Work {
    void run(int iteration);
  }

  /** Launches per timed sample (captured into one CUDA graph, or issued back to back). */
  static final int LAUNCHES_PER_SAMPLE = 20;

  /**
   * Median milliseconds per run of the device work alone: after {@code warm} warm-ups (which also
   * prepare every launch), {@link #LAUNCHES_PER_SAMPLE} runs are captured into a CUDA graph and
   * the graph is replayed {@code iters} times between CUDA events.
   */
  private double time(Work w, int warm, int iters) {
    for (int i = 0; i < warm; i++) {
      w.run(i);
    }
    Cuda.check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    CUgraph graph = new CUgraph();
    CUgraphExec exec = new CUgraphExec();
    Cuda.check(cuStreamBeginCapture(stream, CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
    for (int j = 0; j < LAUNCHES_PER_SAMPLE; j++) {
      w.run(j);
    }
    Cuda.check(cuStreamEndCapture(stream, graph), "cuStreamEndCapture");
    Cuda.check(cuGraphInstantiate(exec, graph, 0), "cuGraphInstantiate");
    try {
      return events(() -> Cuda.check(cuGraphLaunch(exec, stream), "cuGraphLaunch"), iters) / LAUNCHES_PER_SAMPLE;
    } finally {
      Cuda.check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
      Cuda.check(cuGraphDestroy(graph), "cuGraphDestroy");
    }
  }

  /** The same runs issued back to back from Java: includes JCuda's host launch cost when it exceeds the kernel's. */
  private double timeStream(Work w, int iters) {
    int[] k = {0};
    return events(() -> {
      for (int j = 0; j < LAUNCHES_PER_SAMPLE; j++) {
        w.run(k[0]++);
      }
    }, iters) / LAUNCHES_PER_SAMPLE;
  }

  /** Median milliseconds of {@code sample} over {@code iters} samples, timed with CUDA events (after one untimed run). */
  private double events(Runnable sample, int iters) {
    sample.run();
    Cuda.check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    CUevent a = new CUevent();
    CUevent b = new CUevent();
    Cuda.check(cuEventCreate(a, 0), "cuEventCreate");
    Cuda.check(cuEventCreate(b, 0), "cuEventCreate");
    double[] t = new double[iters];
    float[] ms = new float[1];
    for (int i = 0; i < iters; i++) {
      Cuda.check(cuEventRecord(a, stream), "cuEventRecord");
      sample.run();
      Cuda.check(cuEventRecord(b, stream), "cuEventRecord");
      Cuda.check(cuEventSynchronize(b), "cuEventSynchronize");
      Cuda.check(cuEventElapsedTime(ms, a, b), "cuEventElapsedTime");
      t[i] = ms[0];
    }
    Cuda.check(cuEventDestroy(a), "cuEventDestroy");
    Cuda.check(cuEventDestroy(b), "cuEventDestroy");
    Arrays.sort(t);
    return t[iters / 2];
  }

  private double copyBandwidth() {
    long bytes = 1L << 31;
    CUdeviceptr src = alloc(bytes);
    CUdeviceptr dst = alloc(bytes);
    fillRandom(src, bytes, 1);
    double ms = events(() -> Cuda.check(cuMemcpyDtoDAsync(dst, src, bytes, stream), "cuMemcpyDtoDAsync"), 20);
    free(src);
    free(dst);
    return 2.0 * bytes / (ms * 1e-3);
  }

  /** A rescale the stored-value kernels apply in their loads (a CT scan's slope and intercept). */
  private static final io.volpool.format.Rescale RESCALE = new io.volpool.format.Rescale(0.5f, -1024f);

  private void kernel(String name, KernelPlan plan, int n, double bw) {
    if (plan.widens()) {
      throw new IllegalArgumentException(name + ": " + plan.describe() + " widens in a kernel of its own; this"
          + " benchmark times kernels that read the stored values");
    }
    VolumeShape in = plan.shapes().get(0);
    Pipeline pipeline = plan.pipeline();
    VolumeShape out = plan.shapes().get(plan.outputBuffer());
    long inBytes = n * plan.inputBytes();
    long outBytes = n * out.bytes();
    int sets = inBytes < (1L << 30) ? 4 : 1;
    CUdeviceptr[] inputs = new CUdeviceptr[sets];
    for (int i = 0; i < sets; i++) {
      inputs[i] = alloc(inBytes);
      if (plan.stored().isFloat32()) {
        fillRandom(inputs[i], inBytes, 100 + i);
      } else {
        fillStored(inputs[i], inBytes, plan.stored(), 100 + i);
      }
    }
    CUdeviceptr rescale = null;
    if (!plan.stored().isFloat32()) {
      float[] pairs = new float[2 * n];
      for (int v = 0; v < n; v++) {
        pairs[2 * v] = RESCALE.slope();
        pairs[2 * v + 1] = RESCALE.intercept();
      }
      rescale = alloc(pairs.length * 4L);
      Cuda.check(cuMemcpyHtoD(rescale, Pointer.to(pairs), pairs.length * 4L), "cuMemcpyHtoD(rescale)");
    }
    CUdeviceptr[] bufs = new CUdeviceptr[plan.shapes().size()];
    for (int i = 1; i < bufs.length; i++) {
      if (plan.used(i)) {
        bufs[i] = alloc(n * plan.shapes().get(i).bytes());
      }
    }
    CUdeviceptr pairs = rescale;
    try (KernelRunner runner = gpu.runner(plan, 0)) {
      bufs[0] = inputs[0];
      runner.launch(stream, bufs, n, pairs);
      Cuda.check(cuStreamSynchronize(stream), "cuStreamSynchronize");
      results.put(name + "_check", check(pipeline, in, plan.stored(), inputs[0], bufs[plan.outputBuffer()], n, out));
      Work run = i -> {
        bufs[0] = inputs[i % sets];
        runner.launch(stream, bufs, n, pairs);
      };
      double ms = time(run, 5, sets == 1 ? 3 : 20);
      results.put(name + "_stream_ms", timeStream(run, sets == 1 ? 3 : 20));
      double floor = (inBytes + outBytes) / bw * 1e3;
      results.put(name + "_kernels", plan.describe());
      results.put(name + "_ms", ms);
      results.put(name + "_floor_ms", floor);
      results.put(name + "_x_floor", ms / floor);
      results.put(name + "_GBps", (inBytes + outBytes) / (ms * 1e-3) / 1e9);
    }
    for (CUdeviceptr p : inputs) {
      free(p);
    }
    if (rescale != null) {
      free(rescale);
    }
    for (int i = 1; i < bufs.length; i++) {
      if (bufs[i] != null) {
        free(bufs[i]);
      }
    }
  }

  /** Fills {@code bytes} of device memory with random finite values of {@code t} (a 64 MiB block repeated). */
  private void fillStored(CUdeviceptr p, long bytes, ValueType t, long seed) {
    int block = (int) Math.min(bytes, 64L << 20);
    byte[] h = new byte[block];
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < block; i += t.itemSize()) {
      int v = r.nextInt(1 << 16);
      if (t.dtype() == io.volpool.format.Dtype.FLOAT16) {
        v = (v & 0x8000) | (v % 0x7c00);  // finite
      }
      h[i] = (byte) v;
      if (t.itemSize() == 2) {
        h[i + 1] = (byte) (v >>> 8);
      }
    }
    for (long off = 0; off < bytes; off += block) {
      Cuda.check(cuMemcpyHtoD(p.withByteOffset(off), Pointer.to(h), Math.min(block, bytes - off)), "cuMemcpyHtoD(fill)");
    }
  }

  /**
   * Compares the first volume's output with the CPU backend's on the same input (stored values widened
   * and rescaled on the host, as the readers do); returns "ok" or the error.
   */
  private String check(Pipeline p, VolumeShape in, ValueType t, CUdeviceptr x, CUdeviceptr y, int n, VolumeShape out) {
    float[] hx = new float[(int) in.numel()];
    if (t.isFloat32()) {
      Cuda.check(cuMemcpyDtoH(Pointer.to(hx), x, in.bytes()), "cuMemcpyDtoH(check input)");
    } else {
      byte[] raw = new byte[(int) (in.numel() * t.itemSize())];
      Cuda.check(cuMemcpyDtoH(Pointer.to(raw), x, raw.length), "cuMemcpyDtoH(check input)");
      ByteBuffer wide = ByteBuffer.allocate((int) in.bytes()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      t.widen(ByteBuffer.wrap(raw), (int) in.numel(), wide, RESCALE);
      wide.flip().asFloatBuffer().get(hx);
    }
    float[] hy = new float[(int) out.numel()];
    Cuda.check(cuMemcpyDtoH(Pointer.to(hy), y, out.bytes()), "cuMemcpyDtoH(check output)");
    try (CpuBackend cpu = CpuBackend.fast(0)) {
      float[] ref = cpu.run(p, in, hx, 1);
      double num = 0;
      double den = 0;
      for (int i = 0; i < ref.length; i++) {
        if (Float.isNaN(hy[i])) {
          return "NaN at " + i;
        }
        num += (hy[i] - ref[i]) * (double) (hy[i] - ref[i]);
        den += ref[i] * (double) ref[i];
      }
      double rel = Math.sqrt(num / den);
      return rel <= 1e-5 ? String.format("ok (rel L2 %.1e)", rel) : String.format("MISMATCH (rel L2 %.3e)", rel);
    }
  }

  /**
   * Volumes/s through a CUDA executor as the job drives it: two batches in flight, each borrowing
   * a stream for its copies and kernels; with {@code copyFromHeap} each batch is first filled from a
   * Java byte[] (what a row-based reader pays).
   */
  private void hostLoop(Pipeline p, int batch, boolean copyFromHeap) {
    VolumeShape in = REF;
    try (BatchExecutor e = gpu.open(p, in, batch, 0, 0)) {
      byte[] heap = new byte[(int) (batch * in.bytes())];
      SplittableRandom r = new SplittableRandom(5);
      ByteBuffer hb = ByteBuffer.wrap(heap).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      for (int i = 0; i < heap.length / 4; i++) {
        hb.putFloat((float) r.nextDouble());
      }
      java.util.ArrayDeque<Batch> inflight = new java.util.ArrayDeque<>();
      long t0 = 0;
      long volumes = 0;
      for (int i = 0; ; i++) {
        Batch b = e.newBatch(true);
        if (copyFromHeap || i < 2) {
          b.input().put(ByteBuffer.wrap(heap));
        } else {
          // the bytes are already in pinned memory: only the staged copies run
          for (long left = heap.length; left > 0; ) {
            int k = b.input().window((int) Math.min(left, Integer.MAX_VALUE)).remaining();
            b.input().advance(k);
            left -= k;
          }
        }
        e.submit(b, batch, true);
        inflight.add(b);
        if (inflight.size() == 2) {
          Batch done = inflight.poll();
          done.output();
          done.close();
          if (i == 20) {
            t0 = System.nanoTime();
            volumes = 0;
          }
          if (i > 20) {
            volumes += batch;
            if (System.nanoTime() - t0 > 3_000_000_000L) {
              break;
            }
          }
        }
      }
      double secs = (System.nanoTime() - t0) / 1e9;
      for (Batch b : inflight) {
        b.output();
        b.close();
      }
      String key = copyFromHeap ? "host_pipeline_java_heap_volumes_per_s" : "host_pipeline_pinned_volumes_per_s";
      results.put(key, volumes / secs);
      results.put(key.replace("volumes_per_s", "GBps_h2d"), volumes * in.bytes() / secs / 1e9);
    }
  }
}
