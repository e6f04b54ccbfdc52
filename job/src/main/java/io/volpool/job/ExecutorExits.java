package io.volpool.job;

import java.util.ArrayList;
import java.util.List;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What Spark's standalone scheduler says when an executor process ends ("Executor app-.../3 removed:
 * Command exited with code 1"). An executor that dies before it registers (no Java for the worker, a
 * JVM option its Java lacks, a missing module) reaches no listener: Spark logs the removal and
 * nothing else. This collects those lines from the log (log4j2, Spark's own logging), so the
 * resource watch can say why no executor came. Owned by {@link ResourceWatch}; closed with it.
 */
final class ExecutorExits implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorExits.class);
  static final String SOURCE = "org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend";

  private final List<String> removals = new ArrayList<>();
  private Runnable onRemoval = () -> {};
  private AutoCloseable detach = () -> {};

  /** Starts listening; does nothing (saying so at debug level) where log4j2 is not Spark's logging. */
  static ExecutorExits listen() {
    ExecutorExits x = new ExecutorExits();
    try {
      x.detach = x.attach();
    } catch (LinkageError | ClassCastException e) {
      LOG.debug("executor exits are not collected: Spark does not log through log4j2 here ({})", e.toString());
    }
    return x;
  }

  private AutoCloseable attach() {
    LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
    Configuration cfg = ctx.getConfiguration();
    AbstractAppender appender = new AbstractAppender("volpool-executor-exits", null, null, true, Property.EMPTY_ARRAY) {
      @Override
      public void append(LogEvent e) {
        String m = e.getMessage().getFormattedMessage();
        if (m.startsWith("Executor ") && m.contains(" removed: ")) {
          synchronized (removals) {
            removals.add(m);
          }
          onRemoval.run();
        }
      }
    };
    appender.start();
    LoggerConfig existing = cfg.getLoggers().get(SOURCE);
    LoggerConfig lc = existing != null ? existing : new LoggerConfig(SOURCE, Level.INFO, true);
    lc.addAppender(appender, Level.INFO, null);
    if (existing == null) {
      cfg.addLogger(SOURCE, lc);
    }
    ctx.updateLoggers();
    return () -> {
      lc.removeAppender(appender.getName());
      if (existing == null) {
        cfg.removeLogger(SOURCE);
      }
      ctx.updateLoggers();
      appender.stop();
    };
  }

  /** Runs {@code r} (on Spark's thread) after each removal. */
  void onRemoval(Runnable r) {
    this.onRemoval = r;
  }

  /** The removals seen so far, oldest first. */
  List<String> removals() {
    synchronized (removals) {
      return List.copyOf(removals);
    }
  }

  @Override
  public void close() {
    try {
      detach.close();
    } catch (Exception e) {
      LOG.debug("detaching the executor-exit listener: {}", e.toString());
    }
  }
}
