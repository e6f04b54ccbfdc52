package io.volpool.cuda;

import org.junit.jupiter.api.Assumptions;

/** The JVM's CUDA backend for GPU tests, or a skipped test saying why there is none. Outputs are poisoned with NaN. */
final class Gpu {
  private static CudaBackend backend;
  private static String unavailable;

  private Gpu() {}

  static synchronized CudaBackend backend() {
    if (backend == null && unavailable == null) {
      System.setProperty("volpool.cuda.poison", "true");
      System.setProperty("volpool.cuda.widenOnDevice", "true");
      try {
        backend = CudaBackend.create(0.5);
        Runtime.getRuntime().addShutdownHook(new Thread(backend::close));
      } catch (CudaUnavailableException | LinkageError e) {
        unavailable = e.getMessage();
      }
    }
    Assumptions.assumeTrue(backend != null, () -> "GPU test skipped: no usable CUDA GPU here (" + unavailable + ")");
    return backend;
  }
}
