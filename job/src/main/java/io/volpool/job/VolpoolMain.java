package io.volpool.job;

import io.volpool.exec.ExecutorRuntime;
import io.volpool.backend.DeviceUnavailableException;
import io.volpool.job.config.JobSettings;
import io.volpool.conf.ExitCode;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolFailure;
import io.volpool.conf.VolpoolOptions;
import io.volpool.io.BadRecordException;
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
 * 0 success, 2 invalid settings, 3 bad input (a record, a file, no input at all), 4 the environment
 * cannot run the job ({@code device=gpu} without a usable GPU), 5 done with bad records set aside
 * ({@code spark.volpool.badRecords.path}), 1 any other failure (the one a scheduler may retry).
 */
public final class VolpoolMain {
  public static final int EXIT_OK = ExitCode.OK.code();
  public static final int EXIT_FAILED = ExitCode.FAILED.code();
  public static final int EXIT_SETTINGS = ExitCode.SETTINGS.code();
  public static final int EXIT_BAD_RECORD = ExitCode.BAD_INPUT.code();
  public static final int EXIT_ENVIRONMENT = ExitCode.ENVIRONMENT.code();
  public static final int EXIT_QUARANTINED = ExitCode.QUARANTINED.code();
  private static final Pattern NO_GPU = Pattern.compile(Pattern.quote(DeviceUnavailableException.PREFIX) + "[^\\n]*");
  private static final Pattern BAD_RECORD = Pattern.compile("(bad record [^\\n]*)");
  /** The line after a task's bad records saying where it stopped looking for more. */
  private static final Pattern BAD_RECORDS_STOPPED = Pattern.compile("\\((task [^\\n]*(stopped looking|could not look past)"
      + "[^\\n]*)\\)");
  /** Spark's YARN client refusing a container no node can have (Client.verifyClusterResources). */
  private static final Pattern YARN_TOO_BIG = Pattern.compile("Required (executor|AM) memory[^\\n]* is above the max"
      + " threshold[^\\n]*");

  private VolpoolMain() {}

  public static void main(String[] args) {
    Signals.install();
    int code = run(args, System.out, System.err);
    Signals.finished = true;
    ExecutorRuntime.shutdown();
    if (Signals.caught() != null) {
      // the JVM is already shutting down (exiting with the signal's code); System.exit would block for ever
      Signals.done();
      return;
    }
    System.exit(code);
  }

  /**
   * SIGINT, SIGTERM and SIGHUP, from the moment the settings are read: before the output's commit the JVM
   * exits with 128 + the signal's number, as a shell reports it, and the run's FAILED line and status file
   * say so (not the failure the stopped Spark context causes); Spark's shutdown hook stops the context, and
   * a hook of ours waits (up to 5 s, only while tasks run) for the main thread to report before the JVM
   * exits. Once the commit has begun the signal waits ({@link io.volpool.job.commit.CommitGate}): the
   * commit finishes and the run reports its own end, success with exit 0, so the console, the status file
   * and the exit code agree.
   */
  static final class Signals {
    private static volatile sun.misc.Signal caught;
    private static final java.util.concurrent.CountDownLatch DONE = new java.util.concurrent.CountDownLatch(1);

    /** Our handler of one signal, chaining the handler it replaced (Spark's, or the JVM's). */
    private static final class Handler implements sun.misc.SignalHandler {
      private volatile sun.misc.SignalHandler previous;

      void chain(sun.misc.SignalHandler replaced) {
        this.previous = replaced instanceof Handler h ? h.previous : replaced;
      }

      @Override
      public void handle(sun.misc.Signal s) {
        if (io.volpool.job.commit.CommitGate.defer(s)) {
          // the commit has begun: it finishes (the output is whole) and the run reports what happened
          System.err.println("volpool: SIG" + s.getName() + " arrived during the output's commit; the commit finishes"
              + " first, then the run ends as the commit does");
          return;
        }
        caught = s;
        if (previous != null && previous != sun.misc.SignalHandler.SIG_IGN && previous != sun.misc.SignalHandler.SIG_DFL) {
          previous.handle(s);
        } else {
          System.exit(128 + s.getNumber());
        }
      }
    }

    private static final String[] NAMES = {"INT", "TERM", "HUP"};

    static void install() {
      handleAll();
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        Running r = running;
        if (finished) {
          return;
        }
        if (caught == null && r != null) {
          // neither a signal nor the end of main: Spark's handler of a fatal error in a task is exiting the JVM
          int code = 50; // Spark's code for an uncaught error; its 52 (out of memory) cannot be told apart from here
          String why = "Spark's handler of a fatal error in a task exited the JVM while the job ran (Spark's exit code "
              + "50 for an uncaught error, 52 when a JVM ran out of memory; the error is in the log above); no output was"
              + " written";
          r.err().println("volpool: FAILED: " + why);
          RunStatus.write(r.settings(), r.conf(), code, why, r.appId(), r.started(), r.err());
        }
        if (caught != null) {
          // a signal in the JVM's first second, while the main thread still reads the settings (it goes on while this
          // hook runs): wait for them, so the run's line and status file name its output
          for (int i = 0; i < 150 && running == null && !finished; i++) {
            try {
              Thread.sleep(20);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              break;
            }
          }
          r = running;
          if (r == null && !finished && claimReport()) {
            System.err.println("volpool: FAILED: stopped by SIG" + caught.getName() + " before the job started (exit"
                + " code " + (128 + caught.getNumber()) + "); nothing was written");
          }
          boolean ended;
          try {
            // the main thread reports as the job's cancellation reaches it; a task that does not stop soon (a loaded
            // machine, a long batch) must not keep the line and the status from being written before the JVM exits
            // before the job runs (Spark still starting) nothing would end the main thread sooner: report at once
            ended = jobRunning && DONE.await(5, java.util.concurrent.TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ended = false;
          }
          if (!ended && r != null && claimReport()) {
            int code = 128 + caught.getNumber();
            r.err().println(stoppedLine(caught, r.settings().mode() != io.volpool.conf.OutputMode.APPEND));
            // the status file belongs to the run that wrote the output: one stopped before it took it leaves it
            if (VolpoolJob.tookOutput() || !outputExists(r.settings(), r.conf())) {
              RunStatus.write(r.settings(), r.conf(), code, "stopped by SIG" + caught.getName() + (jobStarted
                  ? " while the job ran" : " before the job ran"), r.appId(), r.started(), r.err());
            }
          }
        }
      }, "volpool-status-on-signal"));
    }

    /**
     * Puts our handler on each signal, chaining whatever handles it now: called at start and again once the
     * SparkSession exists, since a handler installed during Spark's start-up would otherwise take the signal
     * from us.
     */
    static void handleAll() {
      for (String name : NAMES) {
        try {
          sun.misc.Signal sig = new sun.misc.Signal(name);
          Handler h = new Handler();
          h.chain(sun.misc.Signal.handle(sig, h));
        } catch (IllegalArgumentException e) {
          // a signal this platform or JVM (-Xrs) does not let us handle
        }
      }
    }

    /** The run in progress, for a status written as the JVM exits under it. */
    record Running(JobSettings settings, SparkConf conf, String appId, java.time.Instant started, PrintStream err) {}

    private static volatile Running running;
    /** The run has reported its end (success or failure): a signal after it changes nothing. */
    static volatile boolean finished;
    /** The job was started (and stays so): what a signal's FAILED line says it stopped. */
    static volatile boolean jobStarted;
    /** The job's tasks run (the main thread fails soon after the context stops, and reports itself). */
    static volatile boolean jobRunning;
    private static final java.util.concurrent.atomic.AtomicBoolean REPORTED = new java.util.concurrent.atomic.AtomicBoolean();

    /** True for the one thread (main, or the shutdown hook) that reports a run stopped by a signal. */
    static boolean claimReport() {
      return REPORTED.compareAndSet(false, true);
    }

    static String stoppedLine(sun.misc.Signal signal, boolean resume) {
      return "volpool: FAILED: stopped by SIG" + signal.getName() + (signal.getName().equals("INT") ? " (Ctrl-C)" : "")
          + (jobStarted ? " while the job ran" : " before the job ran") + " (exit code " + (128 + signal.getNumber())
          + "); no output was written " + (resume
              ? "(what its tasks committed, if any, stays for a rerun with " + VolpoolOptions.MODE.key() + "=resume)"
              : "(the next run on this output removes what this one staged)");
    }

    static void running(Running r) {
      running = r;
    }

    /** The signal that is stopping the JVM, or null. */
    static sun.misc.Signal caught() {
      return caught;
    }

    static void done() {
      DONE.countDown();
    }
  }

  /** Runs the job as {@link #main} would, returning the exit code instead of exiting. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    VolpoolJob.resetRunState();
    SparkConf conf = null;
    JobSettings settings = null;
    java.time.Instant started = java.time.Instant.now();
    String[] appId = new String[1];
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
            out.print(io.volpool.ops.Operators.markdownTable());
            return EXIT_OK;
          case "--operators-table":
            out.print(io.volpool.ops.Operators.markdownOperators());
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
      QuietUserErrors.install();
      conf = new SparkConf();
      if (propsFile != null) {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(Paths.get(propsFile), StandardCharsets.UTF_8)) {
          p.load(r);
        } catch (java.nio.file.NoSuchFileException e) {
          throw new SettingsException("--properties-file " + propsFile + ": file not found (from "
              + Paths.get("").toAbsolutePath() + ")", e);
        } catch (IOException e) {
          throw new SettingsException("--properties-file " + propsFile + ": cannot read it: " + e, e);
        }
        for (String w : notSparkKeys(p.stringPropertyNames(), "--properties-file " + propsFile + ":")) {
          err.println("volpool: WARNING: " + w);
        }
        for (String k : p.stringPropertyNames()) {
          if (!flags.containsKey(k)) {
            conf.set(k, p.getProperty(k).trim());
          }
        }
      }
      if (EMBEDDED && propsFile == null) {
        // as spark-submit does: Spark's defaults file, under --conf, unless a --properties-file replaces it (Spark 4)
        java.nio.file.Path defaults = sparkDefaults();
        if (defaults != null) {
          Properties p = new Properties();
          try (Reader r = Files.newBufferedReader(defaults, StandardCharsets.UTF_8)) {
            p.load(r);
          } catch (IOException e) {
            throw new SettingsException("Spark's defaults file " + defaults + ": cannot read it: " + e, e);
          }
          err.println("volpool: read Spark's defaults from " + defaults + " (" + p.size() + " setting(s))");
          for (String k : p.stringPropertyNames()) {
            if (!flags.containsKey(k) && !conf.contains(k)) {
              conf.set(k, p.getProperty(k).trim());
            }
          }
        }
      }
      flags.forEach(conf::set);
      if (EMBEDDED && conf.contains("spark.driver.memory")) {
        checkDriverMemory(conf.get("spark.driver.memory"), Runtime.getRuntime().maxMemory());
      }
      if (master != null) {
        conf.setMaster(master);
      }
      if (!conf.contains("spark.master")) {
        conf.setMaster("local[*]");
      }
      ignoreGpuResourcesOnLocalMaster(conf, err);
      conf.setIfMissing("spark.app.name", "volpool");
      // running tasks report their counts with each heartbeat: the driver's progress line moves every few seconds
      conf.setIfMissing("spark.executor.heartbeatInterval", conf.get("spark.master").startsWith("local") ? "1s" : "3s");
      Map<String, String> all = new LinkedHashMap<>();
      for (Tuple2<String, String> t : conf.getAll()) {
        all.put(t._1(), t._2());
      }
      for (String w : JobSettings.lookalikeKeys(all.keySet())) {
        err.println("volpool: WARNING: " + w);
      }
      for (String w : notSparkKeys(flags.keySet(), "--conf")) {
        err.println("volpool: WARNING: " + w);
      }
      settings = new JobSettings(all);
      // a signal from here on is reported (line and status file), also while Spark starts
      Signals.running(new Signals.Running(settings, conf, null, started, err));
      VolpoolJob.refuseLocalOutputOnCluster(conf.get("spark.master"), settings,
          org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(conf));
      // a session that already exists (an embedding application, a test suite) is used and left running
      // Spark's classic session named directly: org.apache.spark.sql.SparkSession's own builder and session lookups
      // find it through Scala reflection, whose runtime universe takes 0.5-0.9 s to create in a fresh JVM
      boolean ours = org.apache.spark.sql.classic.SparkSession.getDefaultSession().isEmpty()
          && org.apache.spark.sql.classic.SparkSession.getActiveSession().isEmpty();
      // an existing session is used as it is: the builder would copy this run's settings into its conf, where they
      // would outlive the run (Volpool.transform takes the session's spark.volpool.* as its defaults)
      SparkSession spark = ours ? org.apache.spark.sql.classic.SparkSession.builder().config(conf).getOrCreate()
          : org.apache.spark.sql.classic.SparkSession.active();
      appId[0] = spark.sparkContext().applicationId();
      if (ours && spark.sparkContext().uiWebUrl().isDefined()) {
        // where the job's stages, tasks and volpool's metrics are, while it runs
        err.println("volpool: Spark UI at " + spark.sparkContext().uiWebUrl().get() + " while the job runs");
      }
      Signals.running(new Signals.Running(settings, conf, appId[0], started, err));
      // Spark's start-up may have put its own handlers on the signals: ours go back on top, chaining them
      Signals.handleAll();
      if (Signals.caught() != null) {
        throw new java.io.InterruptedIOException("stopped by SIG" + Signals.caught().getName() + " while Spark started");
      }
      try {
        Signals.jobRunning = true;
        Signals.jobStarted = true;
        RunSummary summary;
        try {
          summary = VolpoolJob.run(spark, settings);
        } finally {
          Signals.jobRunning = false;
        }
        out.print(summary.toText());
        Signals.running(null);
        io.volpool.job.commit.SetAside bad = summary.badRecords();
        int code = bad.records() > 0 ? EXIT_QUARANTINED : EXIT_OK;
        sun.misc.Signal late = io.volpool.job.commit.CommitGate.deferred();
        if (late != null) {
          err.println("volpool: SIG" + late.getName() + " arrived once the output's commit had begun; the commit"
              + " finished, so the run succeeded (exit " + code + ")");
        }
        String said = summary.volumesIn() + " volumes in, " + summary.volumesOut() + " out" + (bad.records() > 0
            ? ", " + bad.records() + " bad record" + (bad.records() == 1 ? "" : "s") + " set aside in " + bad.file() : "");
        RunStatus.write(settings, conf, code, "succeeded: " + said, spark.sparkContext().applicationId(), null, bad, err);
        err.println("volpool: SUCCEEDED: " + said + ", " + settings.output() + " (exit " + code + ")");
        io.volpool.job.commit.KillPoints.reach(io.volpool.job.commit.KillPoints.STATUS_WRITTEN);
        return code;
      } finally {
        if (ours) {
          LocalTaskWarmUp.awaitEnd(10_000);
          spark.stop();
        }
      }
    } catch (Throwable t) {
      Signals.running(null);
      java.io.ByteArrayOutputStream said = new java.io.ByteArrayOutputStream();
      int code;
      sun.misc.Signal signal = Signals.caught();
      if (signal != null) {
        code = 128 + signal.getNumber();
        if (!Signals.claimReport()) {
          return code; // the shutdown hook said it already
        }
        err.println(Signals.stoppedLine(signal, settings != null && settings.mode() != io.volpool.conf.OutputMode.APPEND));
        said.writeBytes(("volpool: FAILED: stopped by SIG" + signal.getName() + (Signals.jobStarted ? " while the job ran"
            : " before the job ran")).getBytes(
            StandardCharsets.UTF_8));
      } else {
        code = report(t, new PrintStream(new TeeStream(err, said), true, StandardCharsets.UTF_8));
      }
      if (VolpoolJob.kept() != null) {
        err.println("volpool: " + VolpoolJob.kept());
      }
      String first = said.toString(StandardCharsets.UTF_8).lines().findFirst().orElse("volpool: FAILED");
      boolean overlap = false;
      for (Throwable c = t; c != null; c = c.getCause()) {
        overlap |= c instanceof io.volpool.job.io.PathOverlap.OverlapException;
      }
      boolean concurrent = false;
      for (Throwable c = t; c != null; c = c.getCause()) {
        concurrent |= c instanceof io.volpool.job.commit.ConcurrentCommitException;
      }
      // the status file belongs to the run that wrote the output: a run refused before taking an output that exists
      // (or beaten to its commit by another run) reports on its console and in its exit code only
      if (settings != null && !overlap && !((!VolpoolJob.tookOutput() || concurrent) && outputExists(settings, conf))) {
        RunStatus.write(settings, conf, code, first.replaceFirst("^volpool: FAILED: ", ""), appId[0], started, err);
      }
      return code;
    }
  }

  /** Whether the run's output exists (false when that cannot be told). */
  private static boolean outputExists(JobSettings s, SparkConf conf) {
    try {
      org.apache.hadoop.fs.Path out = new org.apache.hadoop.fs.Path(s.output());
      return io.volpool.io.Files2.fs(out, org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(conf)).exists(out);
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** Started by scripts/volpool (not spark-submit): the driver is this JVM, already running. */
  static final boolean EMBEDDED = io.volpool.conf.InternalProperties.EMBEDDED.flag();

  /** {@code $SPARK_CONF_DIR/spark-defaults.conf}, else {@code $SPARK_HOME/conf/spark-defaults.conf}, where it exists. */
  static java.nio.file.Path sparkDefaults() {
    String dir = System.getenv("SPARK_CONF_DIR");
    if (dir == null && System.getenv("SPARK_HOME") != null) {
      dir = System.getenv("SPARK_HOME") + "/conf";
    }
    java.nio.file.Path p = dir == null ? null : Paths.get(dir, "spark-defaults.conf");
    return p != null && Files.isRegularFile(p) ? p : null;
  }

  /**
   * spark.driver.memory sizes the driver's JVM as it starts: in an embedded run the JVM already runs, so
   * a value it was not started with (from a properties or defaults file) is refused, naming how to give it.
   */
  static void checkDriverMemory(String value, long maxHeap) {
    long want;
    try {
      want = org.apache.spark.network.util.JavaUtils.byteStringAsBytes(value.matches("\\d+") ? value + "m" : value);
    } catch (RuntimeException e) {
      throw new SettingsException("spark.driver.memory must be a size such as 8g, got '" + value + "'");
    }
    // the JVM reports a little less than -Xmx (a survivor space)
    if (Math.abs(want - maxHeap) > want / 8) {
      throw new SettingsException("spark.driver.memory=" + value + " cannot apply: this JVM started with a "
          + (maxHeap >> 20) + " MiB heap, and a driver's memory is set as its JVM starts. Give it to scripts/volpool as"
          + " --driver-memory " + value + " or --conf spark.driver.memory=" + value + " (on its command line), or"
          + " VOLPOOL_JAVA_OPTS=-Xmx" + value);
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

  /**
   * A local master offers no resources, so tasks asking for a GPU amount would wait for ever for an
   * executor that has one: on a local master the job drops GPU resource requests, saying so (the
   * job still uses the GPU through {@code spark.volpool.device}). conf/spark-gpu.properties is for
   * clusters.
   */
  static void ignoreGpuResourcesOnLocalMaster(SparkConf conf, PrintStream err) {
    if (!conf.get("spark.master").startsWith("local")) {
      return;
    }
    java.util.List<String> dropped = new java.util.ArrayList<>();
    for (Tuple2<String, String> kv : conf.getAll()) {
      String k = kv._1();
      if ((k.startsWith("spark.task.resource.") || k.startsWith("spark.executor.resource.")
          || k.startsWith("spark.driver.resource.")) && !k.startsWith("spark.executor.resource.memoryOverhead")) {
        dropped.add(k + "=" + kv._2());
      }
    }
    if (dropped.isEmpty()) {
      return;
    }
    java.util.Collections.sort(dropped);
    for (String kv : dropped) {
      String k = kv.substring(0, kv.indexOf('='));
      conf.remove(k);
      // spark-submit passes its settings as system properties, which the session builder reads again
      System.clearProperty(k);
    }
    err.println("volpool: WARNING: ignoring " + String.join(", ", dropped) + " on the local master "
        + conf.get("spark.master") + ": local mode offers no resources, so tasks asking for them would wait for ever."
        + " " + VolpoolOptions.DEVICE.key() + " still chooses the GPU; these settings (conf/spark-gpu.properties) are for clusters");
  }

  /**
   * Warnings for keys without the {@code spark.} prefix: Spark keeps them in its configuration but
   * nothing reads them (spark-submit drops them with "Ignoring non-Spark config property").
   */
  static java.util.List<String> notSparkKeys(java.util.Collection<String> keys, String where) {
    java.util.List<String> out = new java.util.ArrayList<>();
    for (String k : keys) {
      if (k.startsWith("spark.")) {
        continue;
      }
      String meant = JobSettings.closest(VolpoolOptions.PREFIX + k);
      out.add(where + " " + k + " is not a Spark setting (it lacks the spark. prefix) and is ignored"
          + (meant != null ? "; did you mean " + meant + "?" : ""));
    }
    return out;
  }

  private static String value(String[] args, int i, String flag) {
    if (i >= args.length) {
      throw new SettingsException(flag + " needs a value");
    }
    return args[i];
  }

  /** Prints the cause a user can act on, and returns the exit code for it. */
  static int report(Throwable t, PrintStream err) {
    // the first failure in the chain whose kind no retry can fix (settings, bad input, the environment) decides
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof VolpoolFailure f && f.exit() != ExitCode.FAILED) {
        err.println("volpool: FAILED: " + (f.line() == null ? text(c) : f.line()));
        if (f.advice() != null) {
          err.println("volpool: " + f.advice());
        }
        return f.exit().code();
      }
      // YARN refuses, at the submission and every time, an executor or AM larger than its largest container
      Matcher yarn = YARN_TOO_BIG.matcher(String.valueOf(c.getMessage()));
      if (yarn.find()) {
        err.println("volpool: FAILED: the cluster cannot run this request: " + yarn.group());
        err.println("volpool: nothing was written; lower spark.executor.memory (with spark.executor.memoryOverhead) or"
            + " spark.yarn.am.memory to fit yarn.scheduler.maximum-allocation-mb, or ask for larger containers; see"
            + " docs/storage.md");
        return EXIT_SETTINGS;
      }
      // a task failure whose exception the driver could not rebuild keeps only its text
      Matcher gpu = NO_GPU.matcher(String.valueOf(c.getMessage()));
      if (gpu.find()) {
        err.println("volpool: FAILED: " + gpu.group());
        err.println("volpool: " + DeviceUnavailableException.ADVICE);
        return EXIT_ENVIRONMENT;
      }
    }
    for (Throwable c = t; c != null; c = c.getCause()) {
      // volpool's failures that a retry may fix (another run's commit, an output check): their line and advice
      if (c instanceof VolpoolFailure f) {
        err.println("volpool: FAILED: " + (f.line() == null ? text(c) : f.line()));
        if (f.advice() != null) {
          err.println("volpool: " + f.advice());
        }
        return f.exit().code();
      }
    }
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof OutOfMemoryError || String.valueOf(c.getMessage()).contains("java.lang.OutOfMemoryError")
          || String.valueOf(c.getMessage()).contains("exited with code 52")) {
        err.println("volpool: FAILED: a JVM ran out of memory (" + text(c).lines().findFirst().orElse("") + "); give the"
            + " driver and executors more memory (VOLPOOL_JAVA_OPTS=-Xmx16g for scripts/volpool, spark.executor.memory on"
            + " a cluster) or lower " + VolpoolOptions.MEMORY_BUDGET.key() + " or " + VolpoolOptions.BATCH_SIZE.key() + "; see docs/memory.md");
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
    for (Throwable c = t; c != null; c = c.getCause()) {
      String io = ioFailure(c);
      if (io != null) {
        err.println("volpool: FAILED: " + io + "; no output was written. Free space or point the path elsewhere, then"
            + " rerun (the next run removes what this one staged)");
        return EXIT_FAILED;
      }
    }
    String text = String.valueOf(t.getMessage());
    Matcher m = BAD_RECORD.matcher(text);
    if (m.find()) {
      String first = m.group(1);
      err.println("volpool: FAILED: " + first);
      // a task names the other bad records it met after the first (Spark repeats the message: each once)
      java.util.Set<String> more = new java.util.LinkedHashSet<>();
      while (m.find()) {
        more.add(m.group(1));
      }
      more.remove(first);
      for (String r : more) {
        err.println("volpool: also " + r);
      }
      Matcher stop = BAD_RECORDS_STOPPED.matcher(text);
      if (stop.find()) {
        err.println("volpool: " + stop.group(1));
      }
      err.println("volpool: " + BadRecordException.ADVICE);
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

  /**
   * A file-system failure said in one line naming the path and its filesystem's free space (a full
   * disk, a read-only or missing folder, a denied permission), or null when {@code c} is none.
   */
  static String ioFailure(Throwable c) {
    String path = null;
    if (c instanceof java.nio.file.FileSystemException f) {
      path = f.getFile();
    }
    String msg = String.valueOf(c.getMessage());
    boolean full = msg.contains("No space left on device") || msg.contains("Disk quota exceeded");
    if (path == null && !full) {
      return null;
    }
    if (path == null) {
      // an absolute path, not the module/class of a stack frame a task's failure quotes ("java.base/java.util...")
      java.util.regex.Matcher m = Pattern.compile("(?<![\\w.$])(/[^\s:()]+)").matcher(msg);
      path = m.find() ? m.group(1) : null;
    }
    StringBuilder sb = new StringBuilder(full ? "the disk is full" : "a file operation failed");
    if (path != null) {
      sb.append(" writing or reading ").append(path);
      java.io.File dir = new java.io.File(path);
      while (dir != null && !dir.exists()) {
        dir = dir.getParentFile();
      }
      if (dir != null) {
        try {
          java.nio.file.FileStore store = Files.getFileStore(dir.toPath());
          sb.append(" (filesystem ").append(store.name()).append(" ").append(store.type()).append(", ")
              .append(store.getUsableSpace() >> 20).append(" MiB free of ").append(store.getTotalSpace() >> 20)
              .append(" MiB)");
        } catch (IOException | RuntimeException e) {
          // the filesystem's figures are extra
        }
      }
    }
    sb.append(": ").append(c.getClass().getSimpleName()).append(": ").append(msg.lines().findFirst().orElse(""));
    return sb.toString();
  }

  /** The message of {@code t}, or its type when it has none (never "null"). */
  static String text(Throwable t) {
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getName() : m;
  }

  static String usage() {
    return String.join("\n",
        "usage: scripts/volpool [--master URL] [--properties-file FILE] [--conf " + VolpoolOptions.PREFIX + "KEY=VALUE]...",
        "       spark-submit --class io.volpool.job.VolpoolMain [spark options] volpool-job-*-spark.jar",
        "       scripts/volpool report EVENT_LOG   (a finished run's summary from Spark's event log)",
        "Runs the volpool pipeline over a dataset of 3D volumes. Exit codes: 0 done, 1 failed (worth a retry), 2 invalid"
            + " settings, 3 bad input, 4 no usable environment (device=gpu without a GPU), 5 done with bad records set"
            + " aside (" + VolpoolOptions.BAD_RECORDS_PATH.key() + "), 130/143 stopped by"
            + " SIGINT/SIGTERM; the outcome is also in .NAME.volpool-status.json beside the output.",
        "Environment (scripts/volpool): VOLPOOL_JAVA_OPTS (JVM flags, default -Xmx8g), JAVA_HOME, VOLPOOL_CLASS_ARCHIVE"
            + " (off, or the class archive's path). Settings (" + VolpoolOptions.PREFIX + "*):",
        io.volpool.ops.Operators.markdownTable());
  }
}
