package io.volpool.job;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.apache.spark.sql.SparkSession;

/**
 * An application with the Spark UI on, as a user runs the job from a notebook or a long-lived driver: it
 * starts a session (UI on port PORT, the Prometheus servlet, the volpool plugin), runs the job's main in
 * it with the remaining args, then saves what the UI serves: the REST API's applications and stages, and
 * the Prometheus scrape, into OUT_DIR; with HOLD_SECONDS it keeps the UI up that long (for a browser's
 * screenshot). Args: PORT OUT_DIR HOLD_SECONDS [--conf K=V ...].
 */
public final class UiApp {
  private UiApp() {}

  static String get(String url) throws IOException {
    try (InputStream in = URI.create(url).toURL().openStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  public static void main(String[] args) throws Exception {
    String port = args[0];
    Path out = Files.createDirectories(Path.of(args[1]));
    int hold = Integer.parseInt(args[2]);
    SparkSession spark = SparkSession.builder().master("local[2]").appName("volpool-ui")
        .config("spark.ui.enabled", "true").config("spark.ui.port", port).config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.prometheus.enabled", "true")
        .config("spark.metrics.conf.*.sink.prometheusServlet.class", "org.apache.spark.metrics.sink.PrometheusServlet")
        .config("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus")
        .config("spark.plugins", "io.volpool.spark.VolpoolPlugin").getOrCreate();
    try {
      int code = VolpoolMain.run(Arrays.copyOfRange(args, 3, args.length), System.out, System.err);
      System.out.println("UI-APP exit " + code);
      String base = "http://127.0.0.1:" + port;
      String apps = get(base + "/api/v1/applications");
      Files.writeString(out.resolve("applications.json"), apps);
      String id = new com.fasterxml.jackson.databind.ObjectMapper().readTree(apps).get(0).get("id").asText();
      Files.writeString(out.resolve("stages.json"), get(base + "/api/v1/applications/" + id + "/stages"));
      Files.writeString(out.resolve("jobs.json"), get(base + "/api/v1/applications/" + id + "/jobs"));
      Files.writeString(out.resolve("prometheus.txt"), get(base + "/metrics/prometheus"));
      System.out.println("UI-APP saved");
      Thread.sleep(hold * 1000L);
    } finally {
      spark.stop();
    }
  }
}
