package io.volpool.bench;

import io.volpool.exec.ExecutorRuntime;
import io.volpool.job.VolpoolJob;
import io.volpool.job.VolpoolMain;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The job's steady state as a long job's executors see it: runs the volpool job {@code RUNS} times in one JVM, so that
 * the runs after the first find the JIT's work done and the pinned and device pools filled, as every task does after
 * a long job's first minutes. A cold JVM compiles the job's code while the first jobs' worth of tasks run: in a job of
 * 5-8 s on 16 cores the compiler threads hold 4-5 of them through the whole steady window (async-profiler's CPU
 * profile, 2026-12-06), so the first run is start-up and is reported apart.
 *
 * <p>Usage: {@code WarmRuns RUNS SUMMARIES_DIR JOB_ARGUMENTS...} (the arguments {@code VolpoolMain} takes, with
 * {@code --conf spark.volpool.output=PATH} on the local filesystem). Before each run the output folder is deleted
 * (every run writes the same output, and two would not fit where one does); after each, the run's summary is copied,
 * with its modification time, to {@code SUMMARIES_DIR/run-N.json}. Exits with the first failing run's exit code.
 */
public final class WarmRuns {
  private WarmRuns() {}

  public static void main(String[] args) throws IOException {
    try {
      check(args);
    } catch (IllegalArgumentException e) {
      System.err.println("usage: WarmRuns RUNS SUMMARIES_DIR JOB_ARGUMENTS...: " + e.getMessage());
      System.exit(2);
    }
    int code = run(args);
    ExecutorRuntime.shutdown();
    System.exit(code);
  }

  /** Runs the job as {@link #main} says, on arguments that passed {@link #check}: the first failing run's code or 0. */
  static int run(String[] args) throws IOException {
    int runs = Integer.parseInt(args[0]);
    Path summaries = Paths.get(args[1]);
    String[] job = Arrays.copyOfRange(args, 2, args.length);
    Path output = output(job);
    Files.createDirectories(summaries);
    int code = 0;
    for (int i = 1; i <= runs && code == 0; i++) {
      delete(output);
      long t0 = System.nanoTime();
      code = VolpoolMain.run(job, System.out, System.err);
      double secs = (System.nanoTime() - t0) / 1e9;
      Path summary = output.resolve(VolpoolJob.SUMMARY_FILE);
      if (code == 0 && Files.exists(summary)) {
        Files.copy(summary, summaries.resolve("run-" + i + ".json"), StandardCopyOption.REPLACE_EXISTING,
            StandardCopyOption.COPY_ATTRIBUTES);
      }
      System.out.printf("volpool warm runs: run %d of %d %s in %.2f s (Spark session included)%n", i, runs,
          code == 0 ? "succeeded" : "FAILED with exit code " + code, secs);
    }
    delete(output);
    return code;
  }

  /** Throws {@link IllegalArgumentException} saying what is wrong with the arguments, before any run. */
  static void check(String[] args) {
    if (args.length < 3) {
      throw new IllegalArgumentException("needs RUNS, SUMMARIES_DIR and the job's arguments");
    }
    if (!args[0].matches("[1-9][0-9]{0,5}")) {
      throw new IllegalArgumentException("RUNS is how many jobs to run, 1 or more; got '" + args[0] + "'");
    }
    output(Arrays.copyOfRange(args, 2, args.length));
  }

  /** The job's output folder: the last {@code --conf spark.volpool.output=PATH} (a {@code file:} URI or a path). */
  static Path output(String[] job) {
    String out = null;
    for (int i = 0; i + 1 < job.length; i++) {
      if (job[i].equals("--conf") && job[i + 1].startsWith("spark.volpool.output=")) {
        out = job[i + 1].substring("spark.volpool.output=".length());
      }
    }
    if (out == null) {
      throw new IllegalArgumentException("WarmRuns needs --conf spark.volpool.output=PATH among the job's arguments");
    }
    return out.startsWith("file:") ? Paths.get(java.net.URI.create(out)) : Paths.get(out);
  }

  private static void delete(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> all = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) all.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    }
  }
}
