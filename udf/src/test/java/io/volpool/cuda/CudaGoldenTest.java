package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.BatchExecutor;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.testing.Golden;
import io.volpool.testing.Tolerance;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every golden case on the GPU (skipped without one), device outputs poisoned with NaN before each run. */
class CudaGoldenTest {
  static Stream<Golden.Case> cases() {
    return Golden.cases().stream();
  }

  /** Runs {@code n} volumes through a CUDA executor in batches of {@code batch}, alternating slots. */
  static float[] runOnGpu(CudaBackend b, Pipeline p, VolumeShape in, float[] x, int n, int batch) {
    VolumeShape out = p.outputShape(in);
    float[] y = new float[(int) (n * out.numel())];
    try (BatchExecutor e = b.open(p, in, batch)) {
      int done = 0;
      int slot = 0;
      int[] pendingStart = new int[e.slots()];
      int[] pendingN = new int[e.slots()];
      boolean[] busy = new boolean[e.slots()];
      int submitted = 0;
      while (done < n) {
        while (submitted < n && !busy[slot]) {
          int k = Math.min(e.maxBatch(), n - submitted);
          ByteBuffer buf = e.input(slot);
          buf.asFloatBuffer().put(x, (int) (submitted * in.numel()), (int) (k * in.numel()));
          buf.position((int) (k * in.bytes()));
          e.submit(slot, k);
          pendingStart[slot] = submitted;
          pendingN[slot] = k;
          busy[slot] = true;
          submitted += k;
          slot = (slot + 1) % e.slots();
        }
        int oldest = -1;
        for (int s = 0; s < e.slots(); s++) {
          if (busy[s] && (oldest < 0 || pendingStart[s] < pendingStart[oldest])) {
            oldest = s;
          }
        }
        ByteBuffer o = e.output(oldest);
        o.asFloatBuffer().get(y, (int) (pendingStart[oldest] * out.numel()), (int) (pendingN[oldest] * out.numel()));
        busy[oldest] = false;
        done += pendingN[oldest];
        slot = oldest;
      }
    }
    return y;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void matchesPyTorch(Golden.Case c) {
    CudaBackend b = Gpu.backend();
    KernelPlan plan = KernelPlan.of(c.pipeline(), c.volumeShape());
    assertThat(plan.steps().size()).isLessThanOrEqualTo(List.of(c.pipeline().stages()).size() + 1);
    float[] y = runOnGpu(b, c.pipeline(), c.volumeShape(), c.input().toFloatArray(), c.batch(), 1);
    Tolerance.assertClose(y, c.expected().toFloatArray(), c + " on GPU (" + plan.describe() + ")");
  }
}
