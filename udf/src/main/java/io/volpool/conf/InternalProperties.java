package io.volpool.conf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The JVM system properties volpool reads ({@code -Dvolpool.*}): switches for tests, kernel development and
 * benchmarks, not settings a job should need (spark-rapids marks such keys {@code .internal()}). Declared here
 * once, each with its default and what it is for; nothing else reads a {@code volpool.*} system property
 * (a test scans the sources), and docs/development.md lists them all (a test compares).
 */
public final class InternalProperties {
  private InternalProperties() {}

  private static final List<Property> DECLARED = new ArrayList<>();

  /** One {@code -D} property: its key, its default (null: unset) and what it is for. Immutable. */
  public record Property(String key, String defaultValue, String doc) {
    /** The value set on this JVM, else the default. */
    public String value() {
      return System.getProperty(key, defaultValue);
    }

    /** The value as a boolean ({@code true} in any case; anything else is false). */
    public boolean flag() {
      return Boolean.parseBoolean(value());
    }

    /** The value as a long, the default where the value is unset or not a number. */
    public long longValue() {
      try {
        return Long.parseLong(value());
      } catch (NumberFormatException e) {
        return Long.parseLong(defaultValue);
      }
    }
  }

  private static Property add(String key, String defaultValue, String doc) {
    Property p = new Property(key, defaultValue, doc);
    DECLARED.add(p);
    return p;
  }

  public static final Property CUDA_POISON = add("volpool.cuda.poison", "false",
      "Tests: fill every device output buffer with NaN before its kernels run, so an output element a kernel skips"
          + " fails the comparison.");
  public static final Property CUDA_WIDEN_ON_DEVICE = add("volpool.cuda.widenOnDevice", "true",
      "`false`: batches of 8- and 16-bit volumes are widened by the readers on the host, as before widening on the"
          + " device (a way back, and the baseline of the dtype benchmark).");
  public static final Property CUDA_SLAB_RUN_BYTES = add("volpool.cuda.slabRunBytes", String.valueOf(256L << 20),
      "Host bytes one GPU slab run aims at (its two input windows and two output slabs); benchmarks set the largest"
          + " slabs with it.");
  public static final Property CUDA_SLAB_READ_THREADS = add("volpool.cuda.slabReadThreads", "0",
      "Read threads of every GPU slab run (benchmarks); 0: from the host's cores and the runs the budget admits.");
  public static final Property CUDA_STAGING_CHUNK_BYTES = add("volpool.cuda.stagingChunkBytes", String.valueOf(8L << 20),
      "Bytes of one GPU input staging chunk (two per batch).");
  public static final Property FATBIN = add("volpool.fatbin", null,
      "Kernel development: a fatbin file loaded instead of the jar's, to compare a variant without rebuilding the jar.");
  public static final Property COMMIT_LOCK_WAIT_MILLIS = add("volpool.commitLock.waitMillis", "60000",
      "Tests: how long a commit waits for another live run's commit or recovery to release the output's lock.");
  public static final Property EMBEDDED = add("volpool.embedded", "false",
      "Set by scripts/volpool: the driver is this JVM (not spark-submit's).");
  public static final Property KILL_AT = add("volpool.test.killAt", null,
      "Tests: `POINT`, `POINT:TERM` or `POINT:SLEEP=N` stops the driver at a named point of the run and its commit"
          + " (KillPoints), for the kill-point matrix.");

  /** Every property, in declaration order. */
  public static final List<Property> ALL = Collections.unmodifiableList(DECLARED);
}
