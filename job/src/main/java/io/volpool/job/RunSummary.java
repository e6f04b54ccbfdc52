package io.volpool.job;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a finished run did, printed as one screen and written as {@code _volpool_summary.json}
 * into the output directory. Immutable value.
 */
public record RunSummary(String status, String input, String inputFormat, String output, String outputFormat,
    String pipeline, String backend, long rowsIn, long rowsOut, long bytesIn, long bytesOut, long batches,
    double wallSeconds, Map<String, String> settings) {

  public double volumesPerSecond() {
    return wallSeconds > 0 ? rowsIn / wallSeconds : 0;
  }

  /** The summary as pretty JSON. */
  public String toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("status", status);
    m.put("input", input);
    m.put("input_format", inputFormat);
    m.put("output", output);
    m.put("output_format", outputFormat);
    m.put("pipeline", pipeline);
    m.put("backend", backend);
    m.put("rows_in", rowsIn);
    m.put("rows_out", rowsOut);
    m.put("bytes_in", bytesIn);
    m.put("bytes_out", bytesOut);
    m.put("batches", batches);
    m.put("wall_seconds", Math.round(wallSeconds * 1000) / 1000.0);
    m.put("volumes_per_second", Math.round(volumesPerSecond() * 10) / 10.0);
    m.put("settings", settings);
    try {
      return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(m) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The one-screen text summary. */
  public String toText() {
    return String.join("\n",
        "volpool run summary",
        "  status        " + status,
        "  pipeline      " + pipeline,
        "  backend       " + backend,
        "  input         " + input + " (" + inputFormat + ")",
        "  output        " + output + " (" + outputFormat + ")",
        "  volumes       " + rowsIn + " in, " + rowsOut + " out, " + batches + " batches",
        "  bytes         " + mib(bytesIn) + " in, " + mib(bytesOut) + " out",
        String.format("  wall time     %.2f s", wallSeconds),
        String.format("  throughput    %.1f volumes/s, %.1f MiB/s in", volumesPerSecond(),
            wallSeconds > 0 ? bytesIn / 1048576.0 / wallSeconds : 0),
        "  summary file  " + output + "/_volpool_summary.json") + "\n";
  }

  private static String mib(long b) {
    return String.format("%.1f MiB", b / 1048576.0);
  }
}
