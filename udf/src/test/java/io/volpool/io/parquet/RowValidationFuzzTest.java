package io.volpool.io.parquet;

import io.volpool.io.BadRecordException;
import io.volpool.io.PageGate;
import io.volpool.io.VolumeSource;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.PhaseTimes;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fuzzing of the Parquet row rules: 10,000 rows with random shapes (wrong ranks, zeros, negatives,
 * nulls, values past 2^31 and products past 2^63), dtypes and data lengths. Each row must be
 * rejected with a {@link BadRecordException} naming it exactly when the rules say so (checked
 * with exact integer arithmetic here), and otherwise read byte for byte; nothing else may happen.
 */
class RowValidationFuzzTest {
  static final MessageType SCHEMA = MessageTypeParser.parseMessageType(
      "message m { required binary id (STRING); optional group shape (LIST) { repeated group list {"
          + " optional int64 element; } } optional binary dtype (STRING); optional binary data; }");
  static final long[] DIMS = {0, 1, 2, 3, 5, -1, -7, 2147483647L, 2147483648L, 4611686018427387904L, Long.MIN_VALUE};

  /** The dtype strings of the mix and their sizes (0: not a dtype the rules accept). */
  static final java.util.Map<String, Integer> SIZES = java.util.Map.of("float32", 4, "<f4", 4, "float64", 8, "int16", 2,
      ">i2", 2, "<u2", 2, "|u1", 1, "bfloat16", 2, "int64", 0, "f4 ", 0);

  static int size(String dtype) {
    return dtype == null ? 0 : SIZES.getOrDefault(dtype, 0);
  }

  /** What the reader must put into the batch: the stored values widened, element by element, as float32. */
  static byte[] widened(String dtype, byte[] data) {
    java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(data).order(dtype.startsWith(">") ? java.nio.ByteOrder.BIG_ENDIAN
        : java.nio.ByteOrder.LITTLE_ENDIAN);
    int n = data.length / size(dtype);
    java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate(n * 4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < n; i++) {
      float v = switch (dtype) {
        case "float32", "<f4" -> in.getFloat(4 * i);
        case "float64" -> (float) in.getDouble(8 * i);
        case "int16", ">i2" -> in.getShort(2 * i);
        case "<u2" -> Short.toUnsignedInt(in.getShort(2 * i));
        case "|u1" -> Byte.toUnsignedInt(in.get(i));
        case "bfloat16" -> Float.intBitsToFloat(in.getShort(2 * i) << 16);
        default -> throw new AssertionError(dtype);
      };
      out.putFloat(4 * i, v);
    }
    return out.array();
  }

  record Row(String id, Long[] shape, String dtype, byte[] data) {
    boolean valid() {
      if (shape == null || shape.length != 4 || data == null || size(dtype) == 0) {
        return false;
      }
      BigInteger n = BigInteger.valueOf(size(dtype));
      for (Long d : shape) {
        if (d == null || d <= 0 || d > Integer.MAX_VALUE) {
          return false;
        }
        n = n.multiply(BigInteger.valueOf(d));
      }
      return n.equals(BigInteger.valueOf(data.length));
    }
  }

  static Row random(SplittableRandom r, int i) {
    Long[] shape = null;
    if (r.nextInt(20) != 0) {
      int rank = r.nextInt(10) < 8 ? 4 : r.nextInt(7);
      shape = new Long[rank];
      for (int k = 0; k < rank; k++) {
        shape[k] = r.nextInt(30) == 0 ? null : r.nextInt(4) == 0 ? DIMS[r.nextInt(DIMS.length)] : 1L + r.nextInt(4);
      }
    }
    String[] mix = {"float32", "float32", "float32", "<f4", "float64", "int16", ">i2", "<u2", "|u1", "bfloat16", "int64",
        "f4 ", "", null};
    String dtype = mix[r.nextInt(mix.length)];
    byte[] data = null;
    if (r.nextInt(20) != 0) {
      long want = Math.max(1, size(dtype));
      boolean small = shape != null;
      if (shape != null) {
        for (Long d : shape) {
          if (d == null || d <= 0 || d > 64) {
            small = false;
            break;
          }
          want *= d;
        }
      }
      int len = small && want <= 4096 && r.nextInt(4) != 0 ? (int) want : r.nextInt(64) * (r.nextBoolean() ? 4 : 1);
      data = new byte[len];
      r.nextBytes(data);
    }
    return new Row("r" + i, shape, dtype, data);
  }

  /** Rows per run: {@code -Dvolpool.fuzz.rows=N} for a deeper search. */
  static final int ROWS = Integer.getInteger("volpool.fuzz.rows", 10_000);

  @Test
  void everyRowIsRejectedWhenTheRulesSaySoAndReadExactlyOtherwise(@TempDir Path tmp) throws Exception {
    long seed = Long.getLong("volpool.fuzz.seed", System.nanoTime());
    String replay = "replay with -Dvolpool.fuzz.seed=" + seed + " -Dvolpool.fuzz.rows=" + ROWS;
    System.out.println("fuzz rows: random seed " + seed + " (" + replay + ")");
    SplittableRandom r = new SplittableRandom(seed);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < ROWS; i++) {
      rows.add(random(r, i));
    }
    Path file = tmp.resolve("rows.parquet");
    SimpleGroupFactory f = new SimpleGroupFactory(SCHEMA);
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(file.toUri()))
        .withConf(new Configuration()).withType(SCHEMA).build()) {
      for (Row row : rows) {
        Group g = f.newGroup().append("id", row.id());
        if (row.shape() != null) {
          Group s = g.addGroup("shape");
          for (Long d : row.shape()) {
            Group e = s.addGroup("list");
            if (d != null) {
              e.append("element", d);
            }
          }
        }
        if (row.dtype() != null) {
          g.append("dtype", row.dtype());
        }
        if (row.data() != null) {
          g.append("data", Binary.fromConstantByteArray(row.data()));
        }
        w.write(g);
      }
    }
    int rejected = 0;
    String lastMessage = null;
    int read = 0;
    List<String> wrong = new ArrayList<>();
    TensorLayout layout = TensorLayout.detect(SCHEMA, null, null);
    try (ParquetVolumeInput in = new ParquetVolumeInput(List.of(new ParquetSplit(file.toUri().toString(), "", 0,
        file.toFile().length())), layout, new Configuration(), new PhaseTimes())) {
      for (Row row : rows) {
        VolumeSource v = in.next(PageGate.UNLIMITED);
        boolean ok;
        try {
          v.shape();
          CollectingSink sink = new CollectingSink((int) v.shape().bytes(), false, false);
          v.copyTo(sink);
          ok = true;
          if (!Arrays.equals(sink.bytes(), widened(row.dtype(), row.data()))) {
            wrong.add(row.id() + " read different bytes");
          }
          read++;
        } catch (BadRecordException e) {
          ok = false;
          rejected++;
          lastMessage = e.getMessage();
          if (!e.getMessage().startsWith("bad record id=" + row.id() + ": ")) {
            wrong.add(row.id() + ": message does not name the record: " + e.getMessage());
          }
        } catch (RuntimeException e) {
          wrong.add(row.id() + " " + row + ": " + e);
          continue;
        }
        if (ok != row.valid()) {
          wrong.add(row.id() + " shape=" + Arrays.toString(row.shape()) + " [" + lastMessage + "]" + " dtype=" + row.dtype() + " data="
              + (row.data() == null ? null : row.data().length) + ": " + (ok ? "accepted" : "rejected") + " but the rules say "
              + (row.valid() ? "valid" : "invalid"));
        }
      }
      assertThat(in.next(PageGate.UNLIMITED)).isNull();
    }
    System.out.println("fuzz rows: " + ROWS + " rows: " + rejected + " rejected, " + read + " read exactly, " + wrong.size()
        + " other");
    assertThat(wrong).as(replay).isEmpty();
    assertThat(read).as("the mix has valid rows (" + replay + ")").isGreaterThan(ROWS / 10);
  }
}
