package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.cuda.CudaBackend;
import io.volpool.cuda.CudaUnavailableException;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** device=gpu without a usable GPU fails the job saying why; device=auto falls back to the CPU. */
class DeviceChoiceTest {
  static String noGpuReason() {
    try (CudaBackend b = CudaBackend.create(1)) {
      return null;
    } catch (CudaUnavailableException | LinkageError e) {
      return e.getMessage();
    }
  }

  @Test
  void gpuRequiredButAbsentFailsClearly(@TempDir Path tmp) {
    String reason = noGpuReason();
    Assumptions.assumeTrue(reason != null, "this machine has a GPU, so device=gpu cannot fail here");
    var conf = JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), "parquet",
        tmp.resolve("out"));
    conf.put("spark.volpool.device", "gpu");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_ENVIRONMENT);
    assertThat(r.err()).contains("volpool: FAILED: spark.volpool.device=gpu but no usable CUDA GPU: " + reason)
        .contains("Set spark.volpool.device=auto to fall back to the CPU");
    assertThat(tmp.resolve("out")).doesNotExist();
  }

  @Test
  void autoFallsBackToCpuWithoutGpu(@TempDir Path tmp) {
    Assumptions.assumeTrue(noGpuReason() != null, "this machine has a GPU: auto picks it");
    var conf = JobEndToEndTest.seedConf(JobEndToEndTest.SEED.dir().resolve("volumes_binary.parquet"), "parquet",
        tmp.resolve("out"));
    conf.put("spark.volpool.device", "auto");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("backend       cpu");
  }
}
