package io.volpool.bench;

import io.volpool.cpu.CpuBackend;
import io.volpool.format.SafeTensors;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.fused.FusedModel;
import io.volpool.ops.fused.FusedOp;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.OptionalInt;
import java.util.SplittableRandom;

/**
 * CPU benchmark in the shape of {@code torch_anchors.py --cpu-threads}: fused then avgpool3d on a
 * batch of 32 reference volumes, one warm-up then 3 timed runs, at each thread count given.
 * Usage: {@code CpuBench MODEL.safetensors 1,16}. Prints {@code cpu_pipeline_volumes_per_s_Nthreads: V}.
 */
public final class CpuBench {
  private CpuBench() {}

  public static void main(String[] args) throws Exception {
    FusedOp fused = FusedModel.load(SafeTensors.read(Files.readAllBytes(Paths.get(args[0])), args[0]),
        new FusedModel.Params(OptionalInt.of(2), OptionalInt.of(1), OptionalInt.of(0), OptionalInt.of(2)));
    Pipeline p = Pipeline.of(fused, new AvgPool3dSpec(3, 2, 1, false, true));
    VolumeShape in = new VolumeShape(3, 16, 32, 32);
    int n = 32;
    float[] x = new float[(int) (n * in.numel())];
    SplittableRandom r = new SplittableRandom(3);
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) r.nextDouble();
    }
    for (String t : (args.length > 1 ? args[1] : "1").split(",")) {
      int threads = Integer.parseInt(t.trim());
      try (CpuBackend cpu = CpuBackend.fast(threads)) {
        for (int w = 0; w < 3; w++) {
          cpu.run(p, in, x, n);
        }
        long t0 = System.nanoTime();
        for (int i = 0; i < 3; i++) {
          cpu.run(p, in, x, n);
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        System.out.printf("cpu_pipeline_volumes_per_s_%dthreads: %.4g%n", threads, 3 * n / secs);
      }
    }
  }
}
