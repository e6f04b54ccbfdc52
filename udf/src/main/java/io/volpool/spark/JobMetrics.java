package io.volpool.spark;

import java.io.Serializable;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.LongAccumulator;

/**
 * Accumulators the partition functions add to and the driver reads for the run summary.
 * Registered on the driver; travels to executors inside the partition functions.
 */
public record JobMetrics(LongAccumulator volumesIn, LongAccumulator volumesOut, LongAccumulator bytesIn,
    LongAccumulator bytesOut, LongAccumulator batches, CollectionAccumulator<String> backends) implements Serializable {

  /** Adds one finished task's counts. */
  void add(BatchRunner<?, ?> r, String backend) {
    volumesIn.add(r.volumesIn());
    volumesOut.add(r.volumesIn());
    bytesIn.add(r.bytesIn());
    bytesOut.add(r.bytesOut());
    batches.add(r.batches());
    backends.add(backend);
  }
}
