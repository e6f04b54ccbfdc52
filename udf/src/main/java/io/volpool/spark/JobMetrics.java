package io.volpool.spark;

import io.volpool.backend.Phase;
import java.io.Serializable;
import org.apache.spark.SparkContext;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.LongAccumulator;

/**
 * Accumulators the tasks add to and the driver reads for the run summary and its checks. Each
 * count is added where the thing happened: volumes read by the readers, volumes and files written
 * by the writers, time by the phase that spent it. Registered on the driver; travels to executors
 * inside the partition function.
 */
public record JobMetrics(LongAccumulator volumesRead, LongAccumulator volumesWritten, LongAccumulator filesWritten,
    LongAccumulator bytesIn, LongAccumulator bytesOut, LongAccumulator batches,
    java.util.EnumMap<Phase, org.apache.spark.util.DoubleAccumulator> phaseSeconds,
    MaxAccumulator peakBudgetBytes, MaxAccumulator peakHeapBytes, CollectionAccumulator<String> backends,
    LongAccumulator slabbedVolumes, LongAccumulator volumeStarts, CollectionAccumulator<String> inputDtypes,
    LongAccumulator quarantined, MaxAccumulator budgetBytes) implements Serializable {

  /** The accumulators' names, as the Spark UI and the event log show them (and {@code EventLogReport} reads them). */
  public static final String PREFIX = "volpool.";
  public static final String VOLUMES_READ = PREFIX + "volumesRead";
  public static final String VOLUMES_WRITTEN = PREFIX + "volumesWritten";
  public static final String BYTES_IN = PREFIX + "bytesIn";
  public static final String BYTES_OUT = PREFIX + "bytesOut";
  public static final String PEAK_BUDGET_BYTES = PREFIX + "peakBudgetBytes";
  public static final String PEAK_HEAP_BYTES = PREFIX + "peakHeapBytes";

  public static JobMetrics register(SparkContext sc) {
    // one accumulator a phase, in seconds summed over tasks, named as the summary names it: the stage page
    // and the event log show "volpool time: read (s)  37.2", not an array
    java.util.EnumMap<Phase, org.apache.spark.util.DoubleAccumulator> phases = new java.util.EnumMap<>(Phase.class);
    for (Phase p : Phase.values()) {
      phases.put(p, sc.doubleAccumulator(phaseName(p)));
    }
    MaxAccumulator budget = new MaxAccumulator();
    sc.register(budget, PEAK_BUDGET_BYTES);
    MaxAccumulator budgetLimit = new MaxAccumulator();
    sc.register(budgetLimit, PREFIX + "budgetBytes");
    MaxAccumulator heap = new MaxAccumulator();
    sc.register(heap, PEAK_HEAP_BYTES);
    return new JobMetrics(sc.longAccumulator(VOLUMES_READ), sc.longAccumulator(VOLUMES_WRITTEN),
        sc.longAccumulator(PREFIX + "filesWritten"), sc.longAccumulator(BYTES_IN),
        sc.longAccumulator(BYTES_OUT), sc.longAccumulator(PREFIX + "batches"), phases, budget, heap,
        sc.collectionAccumulator(PREFIX + "backends"), sc.longAccumulator(PREFIX + "slabbedVolumes"),
        sc.longAccumulator(PREFIX + "volumeStarts"), sc.collectionAccumulator(PREFIX + "inputDtypes"),
        sc.longAccumulator(PREFIX + "badRecordsSetAside"), budgetLimit);
  }

  /** The accumulator of phase {@code p}'s seconds, as the Spark UI shows it: {@code volpool time: read (s)}. */
  public static String phaseName(Phase p) {
    return "volpool time: " + p.label() + " (s)";
  }

  /** Nanoseconds of every phase, summed over the tasks, in {@link Phase} order. */
  public long[] phaseNanos() {
    long[] ns = new long[Phase.values().length];
    for (Phase p : Phase.values()) {
      ns[p.ordinal()] = Math.round(phaseSeconds.get(p).value() * 1e9);
    }
    return ns;
  }
}
