package io.volpool.io.parquet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * The rows of a volume stored across rows read as planes, every way they can be: by position
 * (uncompressed rows in local files: no row in memory; float32 by channel on several threads, int16
 * widened by one), by position with rows that must be read whole (a compressed row, or an int16 row
 * in a volume of float32 read by channel), and whole with read-ahead (compressed rows). Every way
 * gives the planes bit for bit, through heap float windows and direct byte windows, counts every row
 * (a range only those it owns), and gives every byte of memory back.
 */
class PlaneRowsInputTest {
  static final MessageType SCHEMA = MessageTypeParser.parseMessageType("message m { required binary id (STRING);"
      + " required group shape (LIST) { repeated group list { required int32 element; } } required binary dtype (STRING);"
      + " required int32 d0; required int32 d1; required binary data; }");
  static final VolumeShape SHAPE = new VolumeShape(3, 13, 4, 6);
  /** Rows of the volume: planes [0, 3), [3, 4), [4, 8), [8, 13); the files hold two rows each. */
  static final int[][] ROWS = {{0, 3}, {3, 4}, {4, 8}, {8, 13}};
  static final int HW = SHAPE.h() * SHAPE.w();

  /** An integer (so int16 rows hold it exactly) that names its channel, plane and place. */
  static float value(int c, int d, int i) {
    return c * 1000 + d * 10 + i;
  }

  /** Row planes {@code [d0, d1)} of every channel, as float32 or as int16 ({@code <i2}). */
  static Group row(int d0, int d1, boolean int16) {
    Group g = new SimpleGroupFactory(SCHEMA).newGroup().append("id", "v");
    Group s = g.addGroup("shape");
    for (int d : SHAPE.toArray()) {
      s.addGroup("list").append("element", d);
    }
    ByteBuffer b = ByteBuffer.allocate(SHAPE.c() * (d1 - d0) * HW * (int16 ? 2 : 4)).order(ByteOrder.LITTLE_ENDIAN);
    for (int c = 0; c < SHAPE.c(); c++) {
      for (int d = d0; d < d1; d++) {
        for (int i = 0; i < HW; i++) {
          if (int16) {
            b.putShort((short) value(c, d, i));
          } else {
            b.putFloat(value(c, d, i));
          }
        }
      }
    }
    return g.append("dtype", int16 ? "<i2" : "float32").append("d0", d0).append("d1", d1)
        .append("data", Binary.fromConstantByteArray(b.array()));
  }

  /**
   * Writes rows {@code [from, to)} of {@link #ROWS} into {@code file}, one row group, with no dictionary
   * (so an uncompressed value is PLAIN); the rows as the driver plans them.
   */
  static List<PlaneVolume.Row> write(Path file, int from, int to, CompressionCodecName codec, boolean int16)
      throws IOException {
    Files.createDirectories(file.getParent());
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(file.toUri()))
        .withConf(new Configuration()).withType(SCHEMA).withCompressionCodec(codec).withDictionaryEncoding(false)
        .withRowGroupSize(64L << 20).build()) {
      for (int r = from; r < to; r++) {
        w.write(row(ROWS[r][0], ROWS[r][1], int16));
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

  /** Bytes of rows {@code [from, to)} of {@link #ROWS} as float32. */
  static long bytes(int from, int to) {
    return (long) SHAPE.c() * (ROWS[to - 1][1] - ROWS[from][0]) * HW * Float.BYTES;
  }

  /**
   * Each way: two files of two rows, the first file's and the second's codec and dtype as named
   * (uncompressed float32 unless named); the memory each way takes, and what it holds aside.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"uncompressed", "uncompressed-then-snappy", "snappy", "int16", "float32-then-int16"})
  void everyWayGivesThePlanesBitForBitAndCountsEveryRow(String way, @TempDir Path tmp) throws Exception {
    CompressionCodecName none = CompressionCodecName.UNCOMPRESSED;
    CompressionCodecName snappy = CompressionCodecName.SNAPPY;
    boolean int16First = way.equals("int16");
    boolean int16Second = way.contains("int16");
    List<PlaneVolume.Row> rows = new ArrayList<>(write(tmp.resolve("a.parquet"), 0, 2, way.equals("snappy") ? snappy : none,
        int16First));
    rows.addAll(write(tmp.resolve("b.parquet"), 2, 4, way.contains("snappy") ? snappy : none, int16Second));
    PlaneVolume v = new PlaneVolume("v", SHAPE, rows);
    long rowBytes = bytes(3, 4); // the largest row: planes [8, 13)
    long pages = way.contains("snappy") ? Files.size(tmp.resolve("a.parquet")) + Files.size(tmp.resolve("b.parquet")) : 0;
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
          assertEquals(way.equals("uncompressed") || way.equals("uncompressed-then-snappy")
              || way.equals("float32-then-int16"), src.concurrentChannels(), "channels on several threads");
          for (int[] w : windows) {
            read(src, w, direct, pool, way);
          }
          in.finish(src);
        }
      }
      assertEquals(8, in.unitsRead(), "every row counted, once a read of the volume");
      long stored = int16First ? SHAPE.bytes() / 2 : int16Second ? bytes(0, 2) + bytes(2, 4) / 2 : SHAPE.bytes();
      assertEquals(2 * stored, in.storedBytesRead(), "the rows' stored bytes");
      switch (way) {
        case "uncompressed", "int16" -> {
          assertEquals(rowBytes, held, "rows read by position keep one row aside, for a row not stored plainly");
          assertEquals(0, budget.peak(), "no row was read into memory");
        }
        case "uncompressed-then-snappy", "float32-then-int16" -> {
          assertEquals(rowBytes, held);
          // the rows [4, 8) and [8, 13) (compressed, or int16 beside float32 read by channel) are read whole,
          // both at once where a window spans them; compressed pages are counted too, at most the file's bytes
          peak(budget, bytes(2, 4), pages);
        }
        default -> {
          assertEquals(2 * rowBytes, held, "a row read and a row read ahead");
          peak(budget, 2 * rowBytes, pages);
        }
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(0, budget.used(), "every row buffer and page given back");
  }

  /** The budget's peak: {@code rows} of row memory, and at most {@code pages} of compressed pages beside. */
  static void peak(MemoryBudget budget, long rows, long pages) {
    assertTrue(budget.peak() >= rows && budget.peak() <= rows + pages, "peak " + budget.peak() + " for " + rows
        + " of rows and at most " + pages + " of compressed pages");
  }

  /** Reads window {@code w} into a heap float window or a direct byte window (by channel on two threads where it may). */
  static void read(PlaneSource src, int[] w, boolean direct, ExecutorService pool, String way) throws Exception {
    int at = 7;
    int stride = at + (w[1] - w[0]) * HW + 5;
    float[] got = new float[SHAPE.c() * stride];
    if (direct) {
      ByteBuffer dst = ByteBuffer.allocateDirect(got.length * 4).order(ByteOrder.LITTLE_ENDIAN);
      if (src.concurrentChannels() && pool != null) {
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
    assertArrayEquals(expected(w[0], w[1], at, stride), got, way + " planes " + w[0] + ".." + w[1]
        + (direct ? " direct" : " heap"));
  }

  /**
   * Windows go forward: a read of planes whose rows a later window passed (and closed) is refused, naming
   * the volume (before, the planes were left unread); an empty read is no read.
   */
  @org.junit.jupiter.api.Test
  void aReadBehindThePassedRowsIsRefusedNotLeftUnread(@TempDir Path tmp) throws Exception {
    List<PlaneVolume.Row> rows = new ArrayList<>(write(tmp.resolve("a.parquet"), 0, 2, CompressionCodecName.UNCOMPRESSED,
        false));
    rows.addAll(write(tmp.resolve("b.parquet"), 2, 4, CompressionCodecName.UNCOMPRESSED, false));
    PlaneVolume v = new PlaneVolume("v", SHAPE, rows);
    try (PlaneRowsInput in = new PlaneRowsInput(TensorLayout.detect(SCHEMA, null, null), new Configuration(),
        new MemoryBudget(1L << 30), new PhaseTimes())) {
      in.heldBytes(v);
      try (PlaneSource src = in.open(v)) {
        read(src, new int[] {5, 9}, false, null, "uncompressed");
        // an empty read, even at the volume's end, reads nothing and opens no row past the last
        src.read(SHAPE.d(), SHAPE.d(), FloatBuffer.wrap(new float[0]), 0, 0);
        read(src, new int[] {10, 13}, false, null, "uncompressed");
        float[] got = new float[SHAPE.c() * 2 * HW];
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> src.read(0, 2, FloatBuffer.wrap(got), 0, 2 * HW))
            .isInstanceOf(IllegalStateException.class).hasMessageContaining("plane 0 of").hasMessageContaining("passed");
      }
    }
  }

  /**
   * A range of the volume (output planes whose window reads input planes [3, 9)) counts only the rows
   * it owns (from plane 4: the row [3, 4) is the range before's), reads its planes bit for bit, and
   * opens the rows past its last window so that they are checked and counted.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"uncompressed", "snappy"})
  void aRangeCountsTheRowsItOwns(String way, @TempDir Path tmp) throws Exception {
    CompressionCodecName codec = way.equals("snappy") ? CompressionCodecName.SNAPPY : CompressionCodecName.UNCOMPRESSED;
    List<PlaneVolume.Row> rows = new ArrayList<>(write(tmp.resolve("a.parquet"), 0, 2, codec, false));
    rows.addAll(write(tmp.resolve("b.parquet"), 2, 4, codec, false));
    PlaneVolume range = new PlaneVolume("v", SHAPE, rows).range(2, 4, 3, 9, 4);
    assertEquals(3, range.rows().size());
    MemoryBudget budget = new MemoryBudget(1L << 30);
    try (PlaneRowsInput in = new PlaneRowsInput(TensorLayout.detect(SCHEMA, null, null), new Configuration(), budget,
        new PhaseTimes())) {
      in.heldBytes(range);
      assertEquals("v", in.first(range).outputId());
      try (PlaneSource src = in.open(range)) {
        read(src, new int[] {3, 6}, true, null, way);
        in.finish(src);
      }
      assertEquals(2, in.unitsRead(), "the rows [4, 8) and [8, 13); [3, 4) is counted by the range before");
      assertEquals(bytes(2, 4), in.storedBytesRead());
    }
    assertEquals(0, budget.used(), "every row buffer and page given back");
  }
}
