package io.volpool.job;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a finished run did, printed as one screen and written as {@code _volpool_summary.json}
 * into the output directory: counts (volumes and rows read, volumes, rows and files committed,
 * volumes run in slabs; rows and volumes differ where volumes are stored across rows), bytes, the
 * time of each phase summed over tasks, memory peaks and what made the output. Immutable value.
 */
public record RunSummary(String status, Run run, Counts counts, Resources resources, List<String> skipped,
    Map<String, String> provenance, Map<String, String> settings, Timeline timeline, Map<String, Object> continued,
    io.volpool.job.commit.SetAside badRecords) {

  /** What ran: the input and output and their formats, the pipeline, the backends that ran it. */
  public record Run(String input, String inputFormat, String output, String outputFormat, String pipeline,
      String backend) {}

  /**
   * What the run counted: volumes and rows read and committed, files committed, bytes, batches, volumes (or
   * ranges of one) run in slabs, and the volumes the input stores across rows (-1: it stores none so).
   */
  public record Counts(long volumesIn, long volumesOut, long rowsIn, long rowsOut, long filesOut, long bytesIn,
      long bytesOut, long batches, long slabbed, long volumesAcrossRows) {
    /** A run that ran no task. */
    public static final Counts NONE = new Counts(0, 0, 0, 0, 0, 0, 0, 0, 0, -1);
  }

  /**
   * Where the time and memory went: the wall time, each phase's seconds summed over tasks, the executors' memory
   * budget, its peak use and the peak heap, as the executors measured them.
   */
  public record Resources(double wallSeconds, Map<String, Double> phaseSeconds, long budgetBytes, long peakBudgetBytes,
      long peakHeapBytes) {
    /** The resources of a run that ran no task, which took {@code wallSeconds}. */
    public static Resources none(double wallSeconds) {
      return new Resources(wallSeconds, Map.of(), 0, 0, 0);
    }
  }

  /**
   * The summary of a run that ran no task (an output complete already, an append with nothing new), as its
   * {@code status} says.
   */
  public static RunSummary nothingRun(String status, Run run, double wallSeconds, List<String> skipped,
      Map<String, String> provenance, Map<String, String> settings, Map<String, Object> continued) {
    return new RunSummary(status, run, Counts.NONE, Resources.none(wallSeconds), skipped, provenance, settings,
        new Timeline(-1, -1, -1, -1, -1, -1), continued, io.volpool.job.commit.SetAside.NONE);
  }

  public long volumesIn() {
    return counts.volumesIn();
  }

  public long volumesOut() {
    return counts.volumesOut();
  }

  public double volumesPerSecond() {
    return resources.wallSeconds() > 0 ? counts.volumesIn() / resources.wallSeconds() : 0;
  }

  public double gbPerSecondIn() {
    return resources.wallSeconds() > 0 ? counts.bytesIn() / resources.wallSeconds() / 1e9 : 0;
  }

  public double gbPerSecondOut() {
    return resources.wallSeconds() > 0 ? counts.bytesOut() / resources.wallSeconds() / 1e9 : 0;
  }

  /** The summary as pretty JSON. */
  public String toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("status", status);
    m.put("input", run.input());
    m.put("input_format", run.inputFormat());
    m.put("output", run.output());
    m.put("output_format", run.outputFormat());
    m.put("pipeline", run.pipeline());
    m.put("backend", run.backend());
    m.put("volumes_in", counts.volumesIn());
    m.put("volumes_out", counts.volumesOut());
    m.put("rows_in", counts.rowsIn());
    m.put("rows_out", counts.rowsOut());
    m.put("files_out", counts.filesOut());
    m.put("bytes_in", counts.bytesIn());
    m.put("bytes_out", counts.bytesOut());
    m.put("batches", counts.batches());
    m.put("volumes_in_slabs", counts.slabbed());
    if (counts.volumesAcrossRows() >= 0) {
      m.put("volumes_across_rows", counts.volumesAcrossRows());
    }
    if (badRecords.records() > 0) {
      m.put("bad_records", badRecords.records());
      m.put("bad_records_file", badRecords.file().toString());
    }
    m.put("wall_seconds", Math.round(resources.wallSeconds() * 1000) / 1000.0);
    m.put("volumes_per_second", Math.round(volumesPerSecond() * 10) / 10.0);
    m.put("gb_per_second_in", Math.round(gbPerSecondIn() * 1000) / 1000.0);
    m.put("gb_per_second_out", Math.round(gbPerSecondOut() * 1000) / 1000.0);
    Map<String, Object> t = new LinkedHashMap<>();
    // what the run could not measure (no task committed; a steady window too short for two samples) is null, not a number
    t.put("first_task_committed_seconds", measured(round3(timeline.firstCommitSeconds())));
    t.put("steady_window_seconds", timeline.steadyFromSeconds() < 0 ? null
        : List.of(round3(timeline.steadyFromSeconds()), round3(timeline.steadyToSeconds())));
    t.put("steady_volumes_per_second", measured(Math.round(timeline.steadyVolumesPerSecond() * 10) / 10.0));
    t.put("steady_gb_per_second_in", measured(round3(timeline.steadyGbPerSecondIn())));
    t.put("tail_seconds", measured(round3(timeline.tailSeconds())));
    m.put("timeline", t);
    if (!continued.isEmpty()) {
      // a resumed run's kept work and an append's new and known input, counted where they were found
      m.put(continued.containsKey("tasks_kept") ? "resumed" : "appended", continued);
    }
    m.put("phase_seconds_summed_over_tasks", resources.phaseSeconds());
    m.put("memory_budget_bytes", resources.budgetBytes());
    m.put("peak_budget_bytes", resources.peakBudgetBytes());
    m.put("peak_heap_bytes", resources.peakHeapBytes());
    m.put("skipped_files", skipped);
    m.put("provenance", provenance);
    m.put("settings", settings);
    try {
      return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(m) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The one-screen text summary. */
  public String toText() {
    StringBuilder phases = new StringBuilder();
    Map<String, Double> phaseSeconds = resources.phaseSeconds();
    double total = phaseSeconds.values().stream().mapToDouble(Double::doubleValue).sum();
    phaseSeconds.forEach((k, v) -> {
      if (v > 0) {
        phases.append(String.format("%n    %-16s %10.2f s  %5.1f%%", k, v, total > 0 ? 100 * v / total : 0));
      }
    });
    Counts c = counts;
    return String.join("\n",
        "volpool run summary",
        "  status        " + status,
        "  pipeline      " + run.pipeline(),
        "  backend       " + run.backend(),
        "  input         " + run.input() + " (" + run.inputFormat() + ")" + (skipped.isEmpty() ? ""
            : ", " + skipped.size() + " file(s) skipped (see the log)"),
        "  output        " + run.output() + " (" + run.outputFormat() + ")",
        "  volumes       " + c.volumesIn() + " in" + (continued.get("volumes_kept") instanceof Number k
            ? " (and " + k + " kept from the resumed run)" : "") + ", " + c.volumesOut() + " out, "
            + count(c.batches(), "batch", "batches") + ", " + count(c.filesOut(), "file", "files")
            + (c.slabbed() > 0 ? ", " + c.slabbed() + " slabbed" : ""),
        "  rows          " + c.rowsIn() + " in, " + c.rowsOut() + " out" + (c.volumesAcrossRows() >= 0
            ? " (the input holds " + count(c.volumesAcrossRows(), "volume", "volumes") + " stored across rows)"
            : c.rowsIn() != c.volumesIn() || c.rowsOut() != c.volumesOut() ? " (the output holds volumes across rows)" : ""),
        "  bytes         " + mib(c.bytesIn()) + " in, " + mib(c.bytesOut()) + " out" + continuedText()
            + (badRecords.records() > 0 ? "\n  bad records   " + badRecords.records() + " set aside, in " + badRecords.file()
                : ""),
        String.format("  wall time     %.2f s", resources.wallSeconds()),
        String.format("  throughput    %.1f volumes/s, %.3f GB/s in, %.3f GB/s out", volumesPerSecond(), gbPerSecondIn(),
            gbPerSecondOut()),
        "  timeline      " + timelineText(),
        "  memory        peak " + mib(resources.peakBudgetBytes()) + " of the " + mib(resources.budgetBytes())
            + " budget, heap peak " + mib(resources.peakHeapBytes()),
        "  time by phase (summed over tasks):" + phases,
        "  summary file  " + run.output() + "/_volpool_summary.json") + "\n";
  }

  /** The resumed or appended run's line, after the bytes' (empty for other runs). */
  private String continuedText() {
    if (continued.isEmpty()) {
      return "";
    }
    StringBuilder b = new StringBuilder("\n  " + (continued.containsKey("tasks_kept") ? "resumed       " : "appended      "));
    continued.forEach((k, v) -> b.append(k.replace('_', ' ')).append(' ').append(v).append(", "));
    return b.substring(0, b.length() - 2);
  }

  /** {@code x}, or null where the timeline holds -1 for "not measured". */
  private static Double measured(double x) {
    return x < 0 ? null : x;
  }

  private static double round3(double x) {
    return x < 0 ? -1 : Math.round(x * 1000) / 1000.0;
  }

  /** The timeline as one line; parts a short run cannot give are left out. */
  String timelineText() {
    List<String> parts = new java.util.ArrayList<>();
    if (timeline.firstCommitSeconds() >= 0) {
      parts.add(String.format("first task committed at %.2f s", timeline.firstCommitSeconds()));
    }
    if (timeline.steadyVolumesPerSecond() >= 0) {
      parts.add(String.format("steady %.1f volumes/s, %.3f GB/s in (%.1f-%.1f s, 10%%-90%% of the input)",
          timeline.steadyVolumesPerSecond(), timeline.steadyGbPerSecondIn(), timeline.steadyFromSeconds(),
          timeline.steadyToSeconds()));
    } else {
      parts.add("steady state: too short to tell");
    }
    if (timeline.tailSeconds() >= 0) {
      parts.add(String.format("last 10%% and commits %.2f s", timeline.tailSeconds()));
    }
    return String.join(", ", parts);
  }

  private static String mib(long b) {
    return String.format("%.1f MiB", b / 1048576.0);
  }

  /** {@code n} and its noun, singular for one. */
  static String count(long n, String one, String many) {
    return n + " " + (n == 1 ? one : many);
  }
}
