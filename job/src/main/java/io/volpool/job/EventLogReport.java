package io.volpool.job;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.backend.Phase;
import io.volpool.spark.JobMetrics;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The summary of a finished volpool application from Spark's event log, for runs whose console is gone
 * ({@code scripts/volpool report EVENT_LOG}): the volpool job's description, its wall time, the
 * volumes and bytes read and written, the time of each phase summed over tasks, and per executor its
 * tasks, task time and volumes, all from the events Spark wrote (the accumulators volpool names, the
 * tasks' ends). Reads a plain or compressed event log file, or a rolling event log's folder, on any
 * Hadoop filesystem.
 */
public final class EventLogReport {
  /**
   * What the log says of the application's volpool job.
   *
   * @param phaseSeconds each phase's seconds summed over tasks, by the summary's label
   * @param executors per executor id: {tasks, task milliseconds, volumes read, milliseconds in GPU kernels (its
   *     GPU's time: an executor runs on one)}
   * @param peakBudgetBytes the most of the memory budget any task saw in use; -1 when the log does not say
   * @param peakHeapBytes the largest heap in use any task sampled; -1 when the log does not say
   * @param device the run's {@code spark.volpool.device} (what ran the kernels), or null when the log does not say
   */
  public record Report(String app, String description, double wallSeconds, long volumesRead, long volumesWritten,
      long bytesIn, long bytesOut, Map<String, Double> phaseSeconds, Map<String, long[]> executors,
      long peakBudgetBytes, long peakHeapBytes, String device) {}

  private EventLogReport() {}

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: scripts/volpool report EVENT_LOG  (in spark.eventLog.dir: a file, or an eventlog_v2_APP"
          + " folder)");
      System.exit(2);
    }
    try {
      print(read(new Path(args[0]), new Configuration()), System.out);
    } catch (IllegalArgumentException e) {
      System.err.println("volpool report: " + e.getMessage());
      System.exit(2);
    }
  }

  /** Reads the event log at {@code log}; compressed logs (lz4, zstd, snappy, lzf by their extension) are decompressed. */
  public static Report read(Path log, Configuration conf) throws IOException {
    FileSystem fs = log.getFileSystem(conf);
    if (!fs.exists(log)) {
      throw new IllegalArgumentException("no event log at " + log);
    }
    // a rolling event log (Spark's eventlog_v2_APP folder) is its events_N_APP files in order
    java.util.List<Path> parts = new java.util.ArrayList<>();
    if (fs.getFileStatus(log).isDirectory()) {
      for (org.apache.hadoop.fs.FileStatus f : fs.listStatus(log)) {
        if (f.getPath().getName().startsWith("events_")) {
          parts.add(f.getPath());
        }
      }
      parts.sort(java.util.Comparator.comparingLong(p -> Long.parseLong(p.getName().split("_")[1])));
      if (parts.isEmpty()) {
        throw new IllegalArgumentException(log + " is a folder with no events_N files: name a Spark event log");
      }
    } else {
      parts.add(log);
    }
    ObjectMapper json = new ObjectMapper();
    String app = null;
    long start = -1;
    long end = -1;
    String description = null;
    String device = null;
    java.util.Set<Integer> stages = new java.util.HashSet<>();
    Map<String, Double> phases = new LinkedHashMap<>();
    Map<String, Long> counts = new LinkedHashMap<>();
    Map<String, long[]> executors = new TreeMap<>();
    for (Path part : parts) {
      try (InputStream in = org.apache.spark.deploy.history.EventLogFileReader$.MODULE$.openEventLog(part, fs);
          BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        for (String line = r.readLine(); line != null; line = r.readLine()) {
          JsonNode e = json.readTree(line);
          switch (e.path("Event").asText()) {
            case "SparkListenerApplicationStart" -> {
              app = e.path("App Name").asText() + " (" + e.path("App ID").asText() + ")";
              start = e.path("Timestamp").asLong();
            }
            case "SparkListenerApplicationEnd" -> end = e.path("Timestamp").asLong();
            case "SparkListenerEnvironmentUpdate" -> device = e.path("Spark Properties").has(
                io.volpool.conf.VolpoolOptions.DEVICE.key()) ? e.path("Spark Properties").path(
                io.volpool.conf.VolpoolOptions.DEVICE.key()).asText() : "auto (the default)";
            case "SparkListenerJobStart" -> {
              String d = e.path("Properties").path("spark.job.description").asText(null);
              // the job's own stage, not the local warm-up's ("volpool warm-up: N empty tasks ...")
              if (d != null && d.startsWith("volpool ") && !d.startsWith("volpool warm-up")) {
                description = d;
                for (JsonNode s : e.path("Stage IDs")) {
                  stages.add(s.asInt());
                }
              }
            }
            case "SparkListenerStageCompleted" -> {
              JsonNode info = e.path("Stage Info");
              if (!stages.contains(info.path("Stage ID").asInt())) {
                break;
              }
              for (JsonNode a : info.path("Accumulables")) {
                String name = a.path("Name").asText();
                for (Phase p : Phase.values()) {
                  if (name.equals(JobMetrics.phaseName(p))) {
                    phases.merge(p.label(), a.path("Value").asDouble(), Double::sum);
                  }
                }
                if (name.startsWith(JobMetrics.PREFIX + "peak")) {
                  counts.merge(name, a.path("Value").asLong(), Math::max);
                } else if (name.startsWith(JobMetrics.PREFIX)) {
                  counts.merge(name, a.path("Value").asLong(), Long::sum);
                }
              }
            }
            case "SparkListenerTaskEnd" -> {
              if (!stages.contains(e.path("Stage ID").asInt())
                  || !"Success".equals(e.path("Task End Reason").path("Reason").asText())) {
                break;
              }
              JsonNode t = e.path("Task Info");
              long[] x = executors.computeIfAbsent(t.path("Executor ID").asText() + " on " + t.path("Host").asText(),
                  k -> new long[4]);
              x[0]++;
              x[1] += t.path("Finish Time").asLong() - t.path("Launch Time").asLong();
              for (JsonNode a : t.path("Accumulables")) {
                String name = a.path("Name").asText();
                if (JobMetrics.VOLUMES_READ.equals(name)) {
                  x[2] += a.path("Update").asLong();
                } else if (JobMetrics.phaseName(Phase.KERNELS).equals(name)) {
                  x[3] += Math.round(a.path("Update").asDouble() * 1e3);
                }
              }
            }
            default -> {
              // other events carry nothing the report shows
            }
          }
        }
      }
    }
    if (description == null) {
      throw new IllegalArgumentException(log + " holds no volpool job (no job described 'volpool ...'): is it the event log"
          + " of a volpool run?");
    }
    Map<String, Double> ordered = new LinkedHashMap<>();
    for (Phase p : Phase.values()) {
      ordered.put(p.label(), phases.getOrDefault(p.label(), 0.0));
    }
    return new Report(app, description, start >= 0 && end >= start ? (end - start) / 1e3 : -1,
        counts.getOrDefault(JobMetrics.VOLUMES_READ, 0L), counts.getOrDefault(JobMetrics.VOLUMES_WRITTEN, 0L),
        counts.getOrDefault(JobMetrics.BYTES_IN, 0L), counts.getOrDefault(JobMetrics.BYTES_OUT, 0L), ordered, executors,
        counts.getOrDefault(JobMetrics.PEAK_BUDGET_BYTES, -1L), counts.getOrDefault(JobMetrics.PEAK_HEAP_BYTES, -1L), device);
  }

  /** The report as the run's summary prints its figures. */
  public static void print(Report r, PrintStream out) {
    out.println("volpool report (from the event log)");
    out.println("  application   " + r.app());
    out.println("  job           " + r.description());
    out.println(String.format("  wall time     %s", r.wallSeconds() < 0 ? "unknown (the log has no end)"
        : String.format("%.2f s (application)", r.wallSeconds())));
    out.println(String.format("  volumes       %d read, %d written (rows, for volumes across rows)", r.volumesRead(),
        r.volumesWritten()));
    out.println(String.format("  bytes         %.1f MiB in, %.1f MiB out", r.bytesIn() / 1048576.0, r.bytesOut() / 1048576.0));
    double total = r.phaseSeconds().values().stream().mapToDouble(Double::doubleValue).sum();
    out.println("  time by phase (summed over tasks):");
    r.phaseSeconds().forEach((k, v) -> {
      if (v > 0) {
        out.println(String.format("    %-16s %10.2f s  %5.1f%%", k, v, total > 0 ? 100 * v / total : 0));
      }
    });
    out.println(String.format("  memory        peak budget %s, peak heap %s (the largest any task saw)",
        r.peakBudgetBytes() < 0 ? "unknown" : String.format("%.1f MiB", r.peakBudgetBytes() / 1048576.0),
        r.peakHeapBytes() < 0 ? "unknown" : String.format("%.1f MiB", r.peakHeapBytes() / 1048576.0)));
    out.println("  executors:");
    // the kernels' time is the GPU's with device=gpu, the CPU backend's threads' with device=cpu
    String kernels = r.device() == null ? "in kernels" : r.device().equals("gpu") ? "in GPU kernels"
        : r.device().equals("cpu") ? "in CPU kernels" : "in kernels (device=" + r.device() + ")";
    r.executors().forEach((k, v) -> out.println(String.format("    %-24s %5d tasks, %8.2f task-s, %d volumes read, %.3f s"
        + " %s", k, v[0], v[1] / 1e3, v[2], v[3] / 1e3, kernels)));
  }
}
