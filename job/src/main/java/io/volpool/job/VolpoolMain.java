package io.volpool.job;

import io.volpool.backend.Backends;
import io.volpool.job.config.JobSettings;
import io.volpool.job.config.SettingsException;
import io.volpool.job.config.VolpoolOptions;
import io.volpool.io.BadRecordException;
import io.volpool.io.CorruptInputException;
import io.volpool.memory.MemoryBudgetException;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

/**
 * Entry point, under {@code spark-submit} and embedded ({@code scripts/volpool}). Takes the same
 * {@code --conf KEY=VALUE} and {@code --properties-file FILE} flags as spark-submit (plus
 * {@code --master}); without a master it runs Spark locally ({@code local[*]}). Exit codes:
 * 0 success, 2 invalid settings, 3 bad input record, 1 any other failure.
 */
public final class VolpoolMain {
  public static final int EXIT_OK = 0;
  public static final int EXIT_FAILED = 1;
  public static final int EXIT_SETTINGS = 2;
  public static final int EXIT_BAD_RECORD = 3;
  private static final Pattern BAD_RECORD = Pattern.compile("(bad record [^\\n]*)");

  private VolpoolMain() {}

  public static void main(String[] args) {
    int code = run(args, System.out, System.err);
    Backends.closeAll();
    System.exit(code);
  }

  /** Runs the job as {@link #main} would, returning the exit code instead of exiting. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    SparkConf conf = null;
    JobSettings settings = null;
    try {
      Map<String, String> flags = new LinkedHashMap<>();
      String propsFile = null;
      String master = null;
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        switch (a) {
          case "--help":
          case "-h":
            out.print(usage());
            return EXIT_OK;
          case "--settings-table":
            out.print(VolpoolOptions.markdownTable());
            return EXIT_OK;
          case "--conf":
          case "-c": {
            String kv = value(args, ++i, a);
            int eq = kv.indexOf('=');
            if (eq <= 0) {
              throw new SettingsException("--conf takes KEY=VALUE, got '" + kv + "'");
            }
            flags.put(kv.substring(0, eq).trim(), kv.substring(eq + 1));
            break;
          }
          case "--properties-file":
            propsFile = value(args, ++i, a);
            break;
          case "--master":
            master = value(args, ++i, a);
            break;
          default:
            throw new SettingsException("unknown argument '" + a + "'\n" + usage());
        }
      }
      conf = new SparkConf();
      if (propsFile != null) {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(Paths.get(propsFile), StandardCharsets.UTF_8)) {
          p.load(r);
        } catch (IOException e) {
          throw new SettingsException("--properties-file " + propsFile + ": " + e.getMessage(), e);
        }
        for (String k : p.stringPropertyNames()) {
          if (!flags.containsKey(k)) {
            conf.set(k, p.getProperty(k).trim());
          }
        }
      }
      flags.forEach(conf::set);
      if (master != null) {
        conf.setMaster(master);
      }
      if (!conf.contains("spark.master")) {
        conf.setMaster("local[*]");
      }
      conf.setIfMissing("spark.app.name", "volpool");
      // running tasks report their counts with each heartbeat: the driver's progress line moves every few seconds
      conf.setIfMissing("spark.executor.heartbeatInterval", "3s");
      Map<String, String> all = new LinkedHashMap<>();
      for (Tuple2<String, String> t : conf.getAll()) {
        all.put(t._1(), t._2());
      }
      for (String w : JobSettings.lookalikeKeys(all.keySet())) {
        err.println("volpool: WARNING: " + w);
      }
      settings = new JobSettings(all);
      VolpoolJob.refuseLocalOutputOnCluster(conf.get("spark.master"), settings,
          org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(conf));
      // a session that already exists (an embedding application, a test suite) is used and left running
      boolean ours = SparkSession.getDefaultSession().isEmpty() && SparkSession.getActiveSession().isEmpty();
      SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
      try {
        RunSummary summary = VolpoolJob.run(spark, settings);
        out.print(summary.toText());
        RunStatus.write(settings, conf, EXIT_OK, "succeeded: " + summary.rowsIn() + " volumes in, " + summary.rowsOut()
            + " out", spark.sparkContext().applicationId(), err);
        return EXIT_OK;
      } finally {
        if (ours) {
          spark.stop();
        }
      }
    } catch (Throwable t) {
      java.io.ByteArrayOutputStream said = new java.io.ByteArrayOutputStream();
      int code = report(t, new PrintStream(new TeeStream(err, said), true, StandardCharsets.UTF_8));
      String first = said.toString(StandardCharsets.UTF_8).lines().findFirst().orElse("volpool: FAILED");
      boolean overlap = false;
      for (Throwable c = t; c != null; c = c.getCause()) {
        overlap |= c instanceof io.volpool.job.io.PathOverlap.OverlapException;
      }
      if (settings != null && !overlap) {
        RunStatus.write(settings, conf, code, first.replaceFirst("^volpool: FAILED: ", ""), null, err);
      }
      return code;
    }
  }

  /** Writes to two streams. */
  private static final class TeeStream extends java.io.OutputStream {
    private final java.io.OutputStream a;
    private final java.io.OutputStream b;

    TeeStream(java.io.OutputStream a, java.io.OutputStream b) {
      this.a = a;
      this.b = b;
    }

    @Override
    public void write(int x) throws IOException {
      a.write(x);
      b.write(x);
    }

    @Override
    public void write(byte[] x, int off, int len) throws IOException {
      a.write(x, off, len);
      b.write(x, off, len);
    }

    @Override
    public void flush() throws IOException {
      a.flush();
      b.flush();
    }
  }

  private static String value(String[] args, int i, String flag) {
    if (i >= args.length) {
      throw new SettingsException(flag + " needs a value");
    }
    return args[i];
  }

  /** Prints the cause a user can act on, and returns the exit code for it. */
  static int report(Throwable t, PrintStream err) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof SettingsException) {
        err.println("volpool: FAILED: invalid settings: " + text(c));
        err.println("volpool: see the settings table in README.md, or run with --help");
        return EXIT_SETTINGS;
      }
      if (c instanceof MemoryBudgetException) {
        err.println("volpool: FAILED: " + text(c));
        err.println("volpool: nothing was written to the output; see \"Memory\" in README.md");
        return EXIT_SETTINGS;
      }
      if (c instanceof BadRecordException || c instanceof CorruptInputException) {
        err.println("volpool: FAILED: " + text(c));
        err.println("volpool: no output was written; fix or remove that " + (c instanceof BadRecordException ? "record"
            : "file") + " and rerun");
        return EXIT_BAD_RECORD;
      }
    }
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof OutOfMemoryError || String.valueOf(c.getMessage()).contains("java.lang.OutOfMemoryError")
          || String.valueOf(c.getMessage()).contains("exited with code 52")) {
        err.println("volpool: FAILED: a JVM ran out of memory (" + text(c).lines().findFirst().orElse("") + "); give the"
            + " driver and executors more memory (VOLPOOL_JAVA_OPTS=-Xmx16g for scripts/volpool, spark.executor.memory on"
            + " a cluster) or lower spark.volpool.memory.budget or spark.volpool.batchSize; see \"Memory\" in README.md");
        return EXIT_FAILED;
      }
    }
    for (Throwable c = t; c != null; c = c.getCause()) {
      // volpool's own runtime errors (no usable GPU, GPU memory, CUDA calls, output checks) carry a complete message
      StackTraceElement[] st = c.getStackTrace();
      boolean ours = c.getClass().getName().startsWith("io.volpool.")
          || (st.length > 0 && st[0].getClassName().startsWith("io.volpool.") && c instanceof IllegalStateException);
      if (ours) {
        err.println("volpool: FAILED: " + text(c));
        return EXIT_FAILED;
      }
    }
    String text = String.valueOf(t.getMessage());
    Matcher m = BAD_RECORD.matcher(text);
    if (m.find()) {
      err.println("volpool: FAILED: " + m.group(1));
      err.println("volpool: no output was written; fix or remove that record and rerun");
      return EXIT_BAD_RECORD;
    }
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    err.println("volpool: FAILED: unexpected error " + text(root) + (root != t ? " (in " + t.getClass().getName() + ")"
        : "") + "; no output was written; the stack trace follows; if it names a file or a setting, fix that and rerun,"
        + " else report it with the log");
    t.printStackTrace(err);
    return EXIT_FAILED;
  }

  /** The message of {@code t}, or its type when it has none (never "null"). */
  static String text(Throwable t) {
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getName() : m;
  }

  static String usage() {
    return String.join("\n",
        "usage: scripts/volpool [--master URL] [--properties-file FILE] [--conf spark.volpool.KEY=VALUE]...",
        "       spark-submit --class io.volpool.job.VolpoolMain [spark options] volpool-job-*-spark.jar",
        "Runs the volpool pipeline over a dataset of 3D volumes. Settings (spark.volpool.*):",
        VolpoolOptions.markdownTable());
  }
}
