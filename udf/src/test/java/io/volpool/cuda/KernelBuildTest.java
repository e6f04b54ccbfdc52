package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Every .cu has a compiled kernel beside it, built from exactly its current text (scripts/device/build-kernels.sh). */
class KernelBuildTest {
  /** The kernel sources, from the udf module (Maven) or the repository root (JUnit's console launcher). */
  static final Path KERNELS = Files.isDirectory(Paths.get("src/main/resources/kernels"))
      ? Paths.get("src/main/resources/kernels") : Paths.get("udf/src/main/resources/kernels");

  static String sha256(Path p) throws IOException, NoSuchAlgorithmException {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
  }

  @Test
  void compiledKernelsMatchTheirSources() throws Exception {
    List<Path> sources;
    try (Stream<Path> s = Files.list(KERNELS)) {
      sources = s.filter(p -> p.toString().endsWith(".cu")).toList();
    }
    assertThat(sources).isNotEmpty();
    for (Path cu : sources) {
      String name = cu.getFileName().toString().replace(".cu", "");
      Path fatbin = KERNELS.resolve(name + ".fatbin");
      Path record = KERNELS.resolve(name + ".build.txt");
      assertThat(fatbin).as("compiled kernel for " + cu + " (run scripts/device/build-kernels.sh)").exists();
      assertThat(record).as("build record for " + cu).exists();
      String text = Files.readString(record);
      assertThat(text).as(record + ": " + cu + " changed since its kernel was built; run scripts/device/build-kernels.sh")
          .contains("source_sha256: " + sha256(cu));
      assertThat(text).as(record + ": the fatbin is not the one this record built").contains("fatbin_sha256: " + sha256(fatbin));
      assertThat(text).contains("command: nvcc ").contains("code=sm_90");
    }
  }
}
