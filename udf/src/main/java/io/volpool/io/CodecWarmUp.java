package io.volpool.io;

/**
 * Loads the native Snappy library, which Spark writes Parquet with by default, on the warm-up thread
 * ({@code io.volpool.exec.Backends#warmInBackground}) instead of in the first tasks: snappy-java
 * extracts its library from the jar into a temporary file and compares it byte for byte at every JVM
 * start, about 0.1 s that every first task otherwise waits for (a wall-clock profile of the
 * 1,024-volume job showed one task extracting and the other waiting on the class's initialisation).
 * Stateless; the library stays loaded for the JVM's life, as it would after the first task.
 */
public final class CodecWarmUp {
  private CodecWarmUp() {}

  /**
   * Loads the native Snappy library now.
   *
   * @return what was loaded, for the warm-up's log line
   * @throws LinkageError when the library cannot be loaded here (the first Snappy page then fails the same way)
   */
  public static String warm() {
    long t0 = System.nanoTime();
    String version = org.xerial.snappy.Snappy.getNativeLibraryVersion();
    // Snappy's class initialisation loads the library; a call into it proves that it also runs here
    org.xerial.snappy.Snappy.maxCompressedLength(1);
    return "Snappy " + version + " native library loaded in " + (System.nanoTime() - t0) / 1_000_000 + " ms";
  }
}
