package io.volpool.job;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.volpool.job.config.JobSettings;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkConf;

/**
 * The outcome of a run in a file beside its output, {@code .NAME.volpool-status.json}: status,
 * exit code and message, written by the driver in every deploy mode. In cluster deploy mode
 * spark-submit's own exit code does not say whether the driver failed; schedulers (the Airflow DAG)
 * read this file instead. Hidden, so readers of the output's parent folder skip it. Written only
 * where the output's parent folder exists: a run refused before it started creates no folders. Stateless.
 */
public final class RunStatus {
  private RunStatus() {}

  /** The status of a run that completed with bad records set aside (exit 5): its output holds every other record. */
  static final String SUCCEEDED_SETTING_ASIDE = "succeeded_with_bad_records";

  /** Where the status of a run writing {@code output} goes. */
  public static Path path(Path output) {
    return new Path(output.getParent(), "." + output.getName() + ".volpool-status.json");
  }

  static void write(JobSettings s, SparkConf conf, int code, String message, String appId, PrintStream err) {
    write(s, conf, code, message, appId, null, err);
  }

  /**
   * Writes the status of a run that started at {@code startedAt} (null: any time). A failed run does not
   * replace the status of a run that succeeded after it started: the output and its status then
   * belong to that run (two runs raced for one output and the other won).
   */
  static void write(JobSettings s, SparkConf conf, int code, String message, String appId, Instant startedAt,
      PrintStream err) {
    write(s, conf, code, message, appId, startedAt, io.volpool.job.commit.SetAside.NONE, err);
  }

  /** The status of a run that succeeded with {@code bad} records set aside (exit 5), or of any other run. */
  static void write(JobSettings s, SparkConf conf, int code, String message, String appId, Instant startedAt,
      io.volpool.job.commit.SetAside bad, PrintStream err) {
    String scheme = new Path(s.output()).toUri().getScheme();
    if (scheme != null && io.volpool.job.commit.OutputCommit.refusedScheme(scheme)) {
      // such an output is refused before any work: there is no run to report beside it
      err.println("volpool: the run's status was not written: volpool refuses outputs on " + scheme + "://");
      return;
    }
    try {
      Configuration hc = conf == null ? new Configuration()
          : org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(conf);
      Path out = new Path(s.output());
      FileSystem fs = io.volpool.io.Files2.fs(out, hc);
      Path p = path(fs.makeQualified(out));
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("status", code == 0 ? "succeeded" : code == io.volpool.conf.ExitCode.QUARANTINED.code()
          ? SUCCEEDED_SETTING_ASIDE : "failed");
      m.put("exit_code", code);
      m.put("message", message);
      if (bad.records() > 0) {
        m.put("bad_records", bad.records());
        m.put("bad_records_file", bad.file().toString());
      }
      m.put("output", fs.makeQualified(out).toString());
      m.put("input", s.input());
      m.put("application_id", appId);
      m.put("finished_at", Instant.now().toString());
      m.put("volpool_version", Version.VERSION);
      byte[] json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsBytes(m);
      if (!fs.exists(p.getParent())) {
        // a run refused before it started creates no folders: its status has nowhere to go
        err.println("volpool: the run's status was not written: the output's folder " + p.getParent()
            + " does not exist");
        return;
      }
      if (code != 0 && startedAt != null && fs.exists(p)) {
        Map<?, ?> old = read(p, hc);
        Object at = old.get("finished_at");
        if (String.valueOf(old.get("status")).startsWith("succeeded") && at != null && Instant.parse(at.toString()).isAfter(startedAt)) {
          err.println("volpool: the run's status was not written: " + p + " is the status of the run that committed "
              + fs.makeQualified(out) + " (application " + old.get("application_id") + ", finished " + at + ")");
          return;
        }
      }
      // written beside and renamed into place: a full disk leaves the old status (or none), never an empty file
      Path tmp = new Path(p.getParent(), p.getName() + "." + java.util.UUID.randomUUID() + ".tmp");
      try {
        try (OutputStream os = fs.create(tmp, false)) {
          os.write(json);
        }
        if (fs.exists(p)) {
          fs.delete(p, false);
        }
        if (!fs.rename(tmp, p)) {
          throw new java.io.IOException("could not rename " + tmp + " to " + p);
        }
      } finally {
        fs.delete(tmp, false);
      }
    } catch (Exception e) {
      err.println("volpool: WARNING: could not write the run status beside " + s.output() + ": " + e.getMessage());
    }
  }

  /** Reads a status file (tests and tools). */
  public static Map<?, ?> read(Path p, Configuration conf) throws java.io.IOException {
    try (var in = p.getFileSystem(conf).open(p)) {
      return new ObjectMapper().readValue(new String(in.readAllBytes(), StandardCharsets.UTF_8), Map.class);
    }
  }
}
