package io.volpool.job;

/** A class a hostile Parquet footer names as a Spark user-defined type: loading it flags the test. */
public final class EvilUdt {
  static {
    System.setProperty("volpool.test.evilLoaded", "true");
  }
}
