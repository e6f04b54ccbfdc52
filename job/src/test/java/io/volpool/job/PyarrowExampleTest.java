package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's pyarrow example for volumes stored across rows ({@code examples/volumes_across_rows.py})
 * writes a volume that the job reads, and reads what the job writes: the volume comes back with the
 * same bytes after an identity run that cuts it into other rows. Needs python3 with numpy and
 * pyarrow ({@code .ci/run} installs pyarrow with pip); skips, saying so, without them.
 */
class PyarrowExampleTest {
  static Path script() {
    Path p = Paths.get("../examples/volumes_across_rows.py");
    return Files.exists(p) ? p : Paths.get("examples/volumes_across_rows.py");
  }

  static String python(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("python3", script().toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    return out.trim();
  }

  @Test
  void theReadmeExampleWritesWhatTheJobReadsAndReadsWhatItWrites(@TempDir Path tmp) throws Exception {
    try {
      Process p = new ProcessBuilder("python3", "-c", "import numpy, pyarrow").redirectErrorStream(true).start();
      String why = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      Assumptions.assumeTrue(p.waitFor() == 0, "python3 with numpy and pyarrow is needed to run the README's pyarrow"
          + " example (.ci/run installs pyarrow): " + why.lines().reduce((a, b) -> b).orElse(""));
    } catch (IOException e) {
      Assumptions.abort("python3 is not installed: " + e.getMessage());
    }
    Path in = tmp.resolve("in");
    String wrote = python("write", in.toString(), "2", "40", "64", "64", "7");
    assertThat(wrote).startsWith("vol-a ");
    assertThat(python("read", in.toString())).isEqualTo(wrote);
    Path out = tmp.resolve("out");
    // 40 planes of 32 KiB in rows of 7 become rows of at most 1 MiB: 32 planes, then 8
    SparkTests.Result r = SparkTests.run(SparkTests.conf("input", in.toString(), "output", out.toString(),
        "pipeline", "identity", "output.rowBytes", "1m", "device", "cpu"));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       1 in, 1 out").contains("rows          6 in, 2 out");
    assertThat(python("read", out.toString())).isEqualTo(wrote);
    // the reader takes each row's dtype: every output dtype reads back as PyTorch's conversion of the volume
    for (String dtype : List.of("float16", "bfloat16")) {
      Path o = tmp.resolve("out-" + dtype);
      SparkTests.Result d = SparkTests.run(SparkTests.conf("input", in.toString(), "output", o.toString(),
          "pipeline", "identity", "output.rowBytes", "1m", "device", "cpu", "output.dtype", dtype));
      assertThat(d.code()).as(d.err()).isZero();
      assertThat(python("read", o.toString())).as(dtype).isEqualTo(python("write-digest", dtype, "2,40,64,64"));
    }
  }
}
