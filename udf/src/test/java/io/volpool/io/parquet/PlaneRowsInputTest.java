package io.volpool.io.parquet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.io.PlaneVolume;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The rows of a volume stored across rows read as planes, the three ways they can be: by position
 * (uncompressed rows in local files: nothing held in memory, channels read on several threads), by
 * position with a row that must be read whole (a compressed row after an uncompressed first row), and
 * buffered with read-ahead (compressed rows). Every way gives the planes bit for bit, through heap
 * float windows and through direct byte windows read by channel on two threads, and counts every row.
 */
class PlaneRowsInputTest {
  static final MessageType SCHEMA = MessageTypeParser.parseMessageType("message m { required binary id (STRING);"
      + " required group shape (LIST) { repeated group list { required int32 element; } } required binary dtype (STRING);"
      + " required int32 d0; required int32 d1; required binary data; }");
  static final VolumeShape SHAPE = new VolumeShape(3, 13, 4, 6);
  /** Rows of the volume: planes [0, 3), [3, 4), [4, 8), [8, 13); the files hold two rows each. */
  static final int[][] ROWS = {{0, 3}, {3, 4}, {4, 8}, {8, 13}};
  static final int HW = SHAPE.h() * SHAPE.w();

  static float value(int c, int d, int i) {
    return c * 1000 + d * 10 + i * 0.01f + 0.5f;
  }

  static Group row(int d0, int d1) {
    Group g = new SimpleGroupFactory(SCHEMA).newGroup().append("id", "v");
    Group s = g.addGroup("shape");
    for (int d : SHAPE.toArray()) {
      s.addGroup("list").append("element", d);
    }
    ByteBuffer b = ByteBuffer.allocate(SHAPE.c() * (d1 - d0) * HW * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (int c = 0; c < SHAPE.c(); c++) {
      for (int d = d0; d < d1; d++) {
        for (int i = 0; i < HW; i++) {
          b.putFloat(value(c, d, i));
        }
      }
    }
    return g.append("dtype", "float32").append("d0", d0).append("d1", d1).append("data", Binary.fromConstantByteArray(b.array()));
  }

  /** Writes rows {@code [from, to)} of {@link #ROWS} into {@code file}, one row group; the rows as the driver plans them. */
  static List<PlaneVolume.Row> write(Path file, int from, int to, CompressionCodecName codec) throws IOException {
    Files.createDirectories(file.getParent());
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(file.toUri()))
        .withConf(new Configuration()).withType(SCHEMA).withCompressionCodec(codec).withRowGroupSize(64L << 20).build()) {
      for (int r = from; r < to; r++) {
        w.write(row(ROWS[r][0], ROWS[r][1]));
      }
    }
    ParquetSplit split = new ParquetSplit(file.toUri().toString(), "", 0, Files.size(file));
    List<PlaneVolume.Row> rows = new ArrayList<>();
    for (int r = from; r < to; r++) {
      rows.add(new PlaneVolume.Row(split, r - from, ROWS[r][0], ROWS[r][1]));
    }
    return rows;
  }

  /** The planes {@code [d0, d1)} of every channel as a window of {@code stride} floats a channel holds them, from {@code at}. */
  static float[] expected(int d0, int d1, int at, int stride) {
    float[] a = new float[SHAPE.c() * stride];
    for (int c = 0; c < SHAPE.c(); c++) {
      for (int d = d0; d < d1; d++) {
        for (int i = 0; i < HW; i++) {
          a[c * stride + at + (d - d0) * HW + i] = value(c, d, i);
        }
      }
    }
    return a;
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"uncompressed", "uncompressed-then-snappy", "snappy"})
  void everyWayGivesThePlanesBitForBitAndCountsEveryRow(String files, @TempDir Path tmp) throws Exception {
    CompressionCodecName second = files.equals("uncompressed") ? CompressionCodecName.UNCOMPRESSED
        : CompressionCodecName.SNAPPY;
    CompressionCodecName first = files.equals("snappy") ? CompressionCodecName.SNAPPY : CompressionCodecName.UNCOMPRESSED;
    List<PlaneVolume.Row> rows = new ArrayList<>(write(tmp.resolve("a.parquet"), 0, 2, first));
    rows.addAll(write(tmp.resolve("b.parquet"), 2, 4, second));
    PlaneVolume v = new PlaneVolume("v", SHAPE, rows);
    long rowBytes = (long) SHAPE.c() * 5 * HW * Float.BYTES; // the largest row: planes [8, 13)
    MemoryBudget budget = new MemoryBudget(1L << 30);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try (PlaneRowsInput in = new PlaneRowsInput(TensorLayout.detect(SCHEMA, null, null), new Configuration(), budget,
        new PhaseTimes())) {
      long held = in.heldBytes(v);
      assertEquals("v", in.first(v).outputId());
      // windows go forward, across rows and files, skipping planes [9, 10) that no output reads
      int[][] windows = {{0, 2}, {2, 5}, {5, 9}, {10, 13}};
      for (boolean direct : new boolean[] {false, true}) {
        try (PlaneSource src = in.open(v)) {
          assertEquals(!files.equals("snappy"), src.concurrentChannels(), "channels on several threads");
          for (int[] w : windows) {
            int at = 7;
            int stride = at + (w[1] - w[0]) * HW + 5;
            float[] got = new float[SHAPE.c() * stride];
            if (direct) {
              ByteBuffer dst = ByteBuffer.allocateDirect(got.length * 4).order(ByteOrder.LITTLE_ENDIAN);
              if (src.concurrentChannels()) {
                Future<?> other = pool.submit(() -> src.readChannels(2, 3, w[0], w[1], dst, at, stride));
                src.readChannels(0, 2, w[0], w[1], dst, at, stride);
                other.get();
              } else {
                src.read(w[0], w[1], dst, at, stride);
              }
              dst.asFloatBuffer().get(got);
            } else {
              src.read(w[0], w[1], FloatBuffer.wrap(got), at, stride);
            }
            assertArrayEquals(expected(w[0], w[1], at, stride), got, files + " planes " + w[0] + ".." + w[1]
                + (direct ? " direct" : " heap"));
          }
          in.finish(src);
        }
      }
      assertEquals(8, in.unitsRead(), "every row counted, once a read of the volume");
      assertEquals(2 * SHAPE.bytes(), in.storedBytesRead());
      switch (files) {
        case "uncompressed" -> {
          assertEquals(0, held, "rows read by position hold nothing");
          assertEquals(0, budget.peak(), "no row was read into memory");
        }
        case "uncompressed-then-snappy" -> {
          assertEquals(0, held);
          // the compressed rows [4, 8) and [8, 13) are read whole, both at once where a window spans them
          assertEquals((long) SHAPE.c() * 9 * HW * Float.BYTES, budget.peak(), "the compressed rows read whole");
        }
        default -> {
          assertEquals(2 * rowBytes, held, "a row read and a row read ahead");
          assertTrue(budget.peak() > 0 && budget.peak() <= 2 * rowBytes, "peak " + budget.peak());
        }
      }
      assertEquals(0, budget.used(), "every row buffer given back");
      assertFalse(pool.isShutdown());
    } finally {
      pool.shutdownNow();
    }
  }
}
