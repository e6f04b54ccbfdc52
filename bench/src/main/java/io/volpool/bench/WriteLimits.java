package io.volpool.bench;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32;

/**
 * The machine's limit for what the job's output writer does, beside {@code dd}'s: {@code THREADS}
 * threads of one JVM each write a new file of {@code MIB} MiB into {@code DIR} (fresh tmpfs pages on
 * {@code /dev/shm}), in one of these ways:
 * {@code 8M} (8 MiB writes from one buffer, as {@code dd bs=8M}); {@code page} (a 30-byte page
 * header, then a 131,076-byte page of a reference output volume, each its own write, as
 * {@code ParquetBatchWriter} does); {@code page+crc} (the same with each page's CRC-32, as parquet's
 * page checksum); {@code cold} and {@code cold+crc} (pages taken in turn from a 64 MiB buffer, as from
 * a batch's output, so the source is not in cache). Usage: {@code WriteLimits DIR THREADS MIB ROUNDS
 * [MODE,...]}. Prints one line per round and mode: bytes, seconds, GB/s summed over the threads.
 */
public final class WriteLimits {
  private static final int PAGE = 131_076;
  private static final int HEADER = 30;

  private WriteLimits() {}

  public static void main(String[] args) throws Exception {
    Path dir = Paths.get(args[0]);
    int threads = Integer.parseInt(args[1]);
    long each = Long.parseLong(args[2]) << 20;
    int rounds = Integer.parseInt(args[3]);
    String[] modes = args.length > 4 ? args[4].split(",") : new String[] {"8M", "page", "page+crc", "cold", "cold+crc"};
    Files.createDirectories(dir);
    for (int r = 0; r < rounds; r++) {
      for (String mode : modes) {
        ExecutorService ex = Executors.newFixedThreadPool(threads);
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        List<Future<Long>> writers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          Path file = dir.resolve("write-limits-" + t);
          writers.add(ex.submit(() -> write(file, mode, each, start)));
        }
        start.await();
        long t0 = System.nanoTime();
        long bytes = 0;
        for (Future<Long> f : writers) {
          bytes += f.get();
        }
        double s = (System.nanoTime() - t0) / 1e9;
        ex.shutdown();
        System.out.printf("write limits, round %d, %-8s %d threads into new files: %d bytes in %.3f s, %.1f GB/s%n", r, mode,
            threads, bytes, s, bytes / s / 1e9);
        for (int t = 0; t < threads; t++) {
          Files.deleteIfExists(dir.resolve("write-limits-" + t));
        }
      }
    }
  }

  private static long write(Path file, String mode, long each, CyclicBarrier start) throws Exception {
    ByteBuffer big = ByteBuffer.allocateDirect(8 << 20);
    ByteBuffer page = ByteBuffer.allocateDirect(PAGE);
    ByteBuffer header = ByteBuffer.allocateDirect(HEADER);
    ByteBuffer cold = mode.startsWith("cold") ? ByteBuffer.allocateDirect(64 << 20) : null;
    for (int i = 0; i < PAGE; i++) {
      page.put(i, (byte) (i * 7));
    }
    if (cold != null) {
      for (int i = 0; i < cold.capacity(); i += 64) {
        cold.put(i, (byte) i);
      }
    }
    boolean crc = mode.endsWith("+crc");
    Files.deleteIfExists(file);
    start.await();
    long n = 0;
    int at = 0;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      while (n < each) {
        if (mode.equals("8M")) {
          big.clear();
          while (big.hasRemaining()) {
            n += ch.write(big);
          }
          continue;
        }
        ByteBuffer src;
        if (cold != null) {
          if (at + PAGE > cold.capacity()) {
            at = 0;
          }
          src = cold.slice(at, PAGE);
          at += PAGE;
        } else {
          src = page.clear();
        }
        if (crc) {
          new CRC32().update(src.duplicate());
        }
        header.clear();
        n += ch.write(header);
        while (src.hasRemaining()) {
          n += ch.write(src);
        }
      }
    }
    return n;
  }
}
