package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.BatchExecutor;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.testing.Golden;
import io.volpool.testing.Tolerance;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import io.volpool.backend.Batch;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every golden case on the GPU (skipped without one), device outputs poisoned with NaN before each run. */
class CudaGoldenTest {
  static Stream<Golden.Case> cases() {
    return Golden.cases().stream();
  }

  /**
   * Runs {@code n} volumes through a CUDA executor in batches of {@code batch}, two batches in flight
   * as the job drives them, with {@code gap} bytes before each output volume (the strided
   * device-to-host copy must put every volume at its offset).
   */
  static float[] runOnGpu(CudaBackend b, Pipeline p, VolumeShape in, float[] x, int n, int batch, int gap) {
    VolumeShape out = p.outputShape(in);
    float[] y = new float[(int) (n * out.numel())];
    try (BatchExecutor e = b.open(p, in, batch, 0, gap)) {
      java.util.ArrayDeque<Object[]> inflight = new java.util.ArrayDeque<>();
      int submitted = 0;
      int done = 0;
      while (done < n) {
        while (submitted < n && inflight.size() < 2) {
          int k = Math.min(e.maxBatch(), n - submitted);
          Batch bt = e.newBatch(true);
          java.nio.ByteBuffer src = java.nio.ByteBuffer.allocate((int) (k * in.bytes())).order(ByteOrder.LITTLE_ENDIAN);
          src.asFloatBuffer().put(x, (int) (submitted * in.numel()), (int) (k * in.numel()));
          bt.input().put(src);
          e.submit(bt, k, true);
          inflight.add(new Object[] {bt, submitted, k});
          submitted += k;
        }
        Object[] f = inflight.poll();
        Batch bt = (Batch) f[0];
        int start = (int) f[1];
        int k = (int) f[2];
        ByteBuffer o = bt.output();
        for (int i = 0; i < k; i++) {
          int at = (int) bt.outputOffset(i);
          assertThat(at).isEqualTo(i * (gap + out.bytes()) + gap);
          o.slice(at, (int) out.bytes()).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
              .get(y, (int) ((start + i) * out.numel()), (int) out.numel());
        }
        bt.close();
        done += k;
      }
    }
    return y;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void matchesPyTorch(Golden.Case c) {
    CudaBackend b = Gpu.backend();
    KernelPlan plan = KernelPlan.of(c.pipeline(), c.volumeShape());
    // one kernel per stage at most (fused then avgpool3d may be one kernel)
    assertThat(plan.steps()).isNotEmpty().hasSizeLessThanOrEqualTo(c.pipeline().stages().size());
    float[] y = runOnGpu(b, c.pipeline(), c.volumeShape(), c.input().toFloatArray(), c.batch(), 1, 4);
    Tolerance.assertClose(y, c.expected().toFloatArray(), c + " on GPU (" + plan.describe() + ")");
  }
}
