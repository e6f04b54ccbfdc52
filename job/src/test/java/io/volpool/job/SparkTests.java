package io.volpool.job;

import io.volpool.format.Npy;
import io.volpool.format.NpyArray;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;

/** The one local[2] SparkSession the job tests share, and helpers to run the job's main on it. */
final class SparkTests {
  private static SparkSession spark;

  private SparkTests() {}

  /** The backend the job tests run on: cpu here and in CI; -Dvolpool.test.device=gpu on the GPU machine. */
  static String device() {
    return System.getProperty("volpool.test.device", "cpu");
  }

  static synchronized SparkSession spark() {
    if (spark == null) {
      spark = SparkSession.builder().master("local[2]").appName("volpool-tests")
          .config("spark.ui.enabled", "false")
          .config("spark.sql.shuffle.partitions", "2")
          .config("spark.driver.host", "127.0.0.1")
          .getOrCreate();
    }
    return spark;
  }

  /** What a run of {@link VolpoolMain#run} printed and returned. */
  record Result(int code, String out, String err) {}

  /** Runs the job's main on the shared session with {@code --conf} flags for every entry of {@code conf}. */
  static Result run(Map<String, String> conf) {
    spark();
    List<String> args = new ArrayList<>();
    conf.forEach((k, v) -> {
      args.add("--conf");
      args.add(k + "=" + v);
    });
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = VolpoolMain.run(args.toArray(new String[0]), new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  static final String AVG_KERNEL = "spark.volpool.avgpool3d.kernelSize";
  /** The reference AvgPool3d(3, 2, 1). */
  static final Map<String, String> REFERENCE_POOL = Map.of(AVG_KERNEL, "3", "spark.volpool.avgpool3d.stride", "2",
      "spark.volpool.avgpool3d.padding", "1");

  static Map<String, String> conf(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i].startsWith("spark.") ? kv[i] : "spark.volpool." + kv[i], kv[i + 1]);
    }
    if (!m.containsKey("spark.volpool.device")) {
      m.put("spark.volpool.device", device());
    }
    // avgpool3d has no default kernel (as in PyTorch): the tests' pool is the reference one, as in conf/local.properties
    if (m.getOrDefault("spark.volpool.pipeline", "").contains("avgpool3d") && !m.containsKey(AVG_KERNEL)) {
      m.putAll(REFERENCE_POOL);
    }
    return m;
  }

  /** The spark.volpool.* settings of a golden case: its pipeline, the fused model and parameters, avgpool3d's. */
  static Map<String, String> caseSettings(io.volpool.testing.Golden.Case c) {
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put("spark.volpool.pipeline", String.join(",", c.stageNames()));
    conf.put("spark.volpool.device", device());
    com.fasterxml.jackson.databind.JsonNode f = c.fusedParams();
    if (f != null) {
      conf.put("spark.volpool.fused.weights", c.model().toString());
      conf.put("spark.volpool.fused.stride", f.get("stride").asText());
      conf.put("spark.volpool.fused.padding", f.get("padding").asText());
      conf.put("spark.volpool.fused.outputPadding", f.get("output_padding").asText());
      conf.put("spark.volpool.fused.poolKernelSize", f.get("pool_kernel").asText());
    }
    com.fasterxml.jackson.databind.JsonNode m = c.maxParams();
    if (m != null) {
      conf.put("spark.volpool.maxpool3d.kernelSize", m.get("kernel_size").asText());
      conf.put("spark.volpool.maxpool3d.stride", m.get("stride").asText());
      conf.put("spark.volpool.maxpool3d.padding", m.get("padding").asText());
      conf.put("spark.volpool.maxpool3d.dilation", m.get("dilation").asText());
      conf.put("spark.volpool.maxpool3d.ceilMode", m.get("ceil_mode").asText());
    }
    com.fasterxml.jackson.databind.JsonNode a = c.avgParams();
    if (a != null) {
      conf.put("spark.volpool.avgpool3d.kernelSize", a.get("kernel_size").asText());
      conf.put("spark.volpool.avgpool3d.stride", a.get("stride").asText());
      conf.put("spark.volpool.avgpool3d.padding", a.get("padding").asText());
      conf.put("spark.volpool.avgpool3d.ceilMode", a.get("ceil_mode").asText());
      conf.put("spark.volpool.avgpool3d.countIncludePad", a.get("count_include_pad").asText());
    }
    return conf;
  }

  static void writeNpy(Path p, NpyArray a) throws IOException {
    Files.createDirectories(p.getParent());
    try (OutputStream os = Files.newOutputStream(p)) {
      Npy.write(a, os);
    }
  }

  static NpyArray readNpy(Path p) throws IOException {
    return Npy.read(Files.readAllBytes(p), p.toString());
  }
}
