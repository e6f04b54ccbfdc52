package io.volpool.job;

import org.apache.logging.log4j.core.Appender;
import org.apache.logging.log4j.core.Filter;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.ConsoleAppender;
import org.apache.logging.log4j.core.filter.AbstractFilter;

/**
 * Keeps Spark's task-failure traces of volpool's own user errors (a bad record, a bad file, settings) off
 * the console: the one {@code volpool: FAILED} line says what to fix, and 250 lines of Executor,
 * TaskSetManager and SparkHadoopWriter traces before it buried it. The events still reach every other
 * appender (a log file, when one is configured). Installed once by {@link VolpoolMain}; stateless.
 */
final class QuietUserErrors extends AbstractFilter {
  /** volpool's errors that the user fixes in the data or the settings, by class name (as Spark's messages spell them). */
  static final java.util.List<String> USER_ERRORS = java.util.List.of("io.volpool.io.BadRecordException",
      "io.volpool.io.CorruptInputException", "io.volpool.conf.SettingsException",
      "io.volpool.job.io.NoInputException", "io.volpool.memory.MemoryBudgetException",
      "io.volpool.format.TensorFormatException");

  private QuietUserErrors() {
    super(Filter.Result.DENY, Filter.Result.NEUTRAL);
  }

  /** Adds the filter to every console appender of the running log4j configuration; without log4j-core, nothing. */
  static void install() {
    try {
      if (!(org.apache.logging.log4j.LogManager.getContext(false) instanceof LoggerContext ctx)) {
        return;
      }
      for (Appender a : ctx.getConfiguration().getAppenders().values()) {
        if (a instanceof ConsoleAppender c && !installedOn(c.getFilter())) {
          c.addFilter(new QuietUserErrors());
        }
      }
    } catch (LinkageError e) {
      // another logging backend: its console keeps Spark's traces
    }
  }

  private static boolean installedOn(Filter f) {
    if (f instanceof QuietUserErrors) {
      return true;
    }
    if (f instanceof org.apache.logging.log4j.core.filter.CompositeFilter cf) {
      for (Filter x : cf.getFiltersArray()) {
        if (x instanceof QuietUserErrors) {
          return true;
        }
      }
    }
    return false;
  }

  @Override
  public Filter.Result filter(LogEvent event) {
    if (event.getLevel().isLessSpecificThan(org.apache.logging.log4j.Level.INFO)) {
      return Filter.Result.NEUTRAL;
    }
    if (!event.getLoggerName().startsWith("org.apache.spark")) {
      return Filter.Result.NEUTRAL;
    }
    for (Throwable t = event.getThrown(); t != null; t = t.getCause()) {
      if (USER_ERRORS.contains(t.getClass().getName())) {
        return onMatch;
      }
    }
    String m = event.getMessage() == null ? "" : event.getMessage().getFormattedMessage();
    for (String name : USER_ERRORS) {
      if (m.contains(name)) {
        return onMatch;
      }
    }
    return onMismatch;
  }
}
