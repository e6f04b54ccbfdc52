package io.volpool.io.parquet;

import io.volpool.io.BadRecordException;
import io.volpool.io.PageGate;
import io.volpool.io.VolumeSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.backend.PhaseTimes;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The columnar reader against files written by parquet-mr with every codec, page version,
 * dictionary setting and page size (values spanning pages), for both layouts, with nulls in the
 * pass-through columns: every volume comes back byte for byte, through in-place windows (pinned
 * memory) and through copies (the CPU backend's float arrays).
 */
class ParquetVolumeInputTest {
  static final MessageType BINARY = MessageTypeParser.parseMessageType(
      "message m { optional binary id (STRING); optional int64 label; optional group shape (LIST) { repeated group list {"
          + " optional int32 element; } } optional binary dtype (STRING); optional binary data; }");
  static final MessageType FLOATS = MessageTypeParser.parseMessageType(
      "message m { optional binary id (STRING); optional group tensor (LIST) { repeated group list {"
          + " optional float element; } } }");
  static final VolumeShape SHAPE = new VolumeShape(2, 3, 4, 5);

  static byte[] volume(int i, VolumeShape s) {
    ByteBuffer b = ByteBuffer.allocate((int) s.bytes()).order(ByteOrder.LITTLE_ENDIAN);
    SplittableRandom r = new SplittableRandom(100 + i);
    for (int k = 0; k < s.numel(); k++) {
      b.putFloat((float) r.nextDouble(-3, 3));
    }
    return b.array();
  }

  static Stream<Arguments> variants() {
    List<Arguments> out = new ArrayList<>();
    for (CompressionCodecName c : new CompressionCodecName[] {CompressionCodecName.UNCOMPRESSED,
        CompressionCodecName.SNAPPY, CompressionCodecName.ZSTD, CompressionCodecName.GZIP, CompressionCodecName.LZ4_RAW}) {
      for (ParquetProperties.WriterVersion v : ParquetProperties.WriterVersion.values()) {
        for (boolean dict : new boolean[] {false, true}) {
          out.add(Arguments.of(c, v, dict));
        }
      }
    }
    return out.stream();
  }

  /**
   * Writes {@code n} rows; every 7th label is null. Pages of at most 3 rows (sizes checked at every
   * row) make float lists span pages.
   */
  static Path write(Path dir, MessageType schema, int n, CompressionCodecName codec, ParquetProperties.WriterVersion v,
      boolean dict) throws IOException {
    Path p = dir.resolve("f-" + codec + "-" + v + "-" + dict + ".parquet");
    SimpleGroupFactory f = new SimpleGroupFactory(schema);
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(p.toUri()))
        .withConf(new Configuration()).withType(schema).withCompressionCodec(codec).withWriterVersion(v)
        .withDictionaryEncoding(dict).withPageSize(1000).withDictionaryPageSize(4000).withRowGroupSize(3000L)
        .withPageRowCountLimit(3).withMinRowCountForPageSizeCheck(1).build()) {
      for (int i = 0; i < n; i++) {
        Group g = f.newGroup().append("id", "v" + i);
        byte[] vol = volume(i % 4, SHAPE);
        if (schema == BINARY) {
          if (i % 7 != 0) {
            g.append("label", (long) i * 10);
          }
          Group list = g.addGroup("shape").addGroup("list");
          list.append("element", SHAPE.c());
          g.getGroup("shape", 0).addGroup("list").append("element", SHAPE.d());
          g.getGroup("shape", 0).addGroup("list").append("element", SHAPE.h());
          g.getGroup("shape", 0).addGroup("list").append("element", SHAPE.w());
          g.append("dtype", "float32").append("data", Binary.fromConstantByteArray(vol));
        } else {
          Group t = g.addGroup("tensor");
          ByteBuffer bb = ByteBuffer.wrap(vol).order(ByteOrder.LITTLE_ENDIAN);
          for (int k = 0; k < SHAPE.numel(); k++) {
            t.addGroup("list").append("element", bb.getFloat());
          }
        }
        w.write(g);
      }
    }
    return p;
  }

  static List<byte[]> readAll(Path p, TensorLayout layout, boolean windows, List<String> ids) {
    List<byte[]> out = new ArrayList<>();
    try (ParquetVolumeInput in = new ParquetVolumeInput(List.of(new ParquetSplit(p.toUri().toString(), "", 0,
        p.toFile().length())), layout, new Configuration(), new PhaseTimes())) {
      VolumeSource v;
      while ((v = in.next(PageGate.UNLIMITED)) != null) {
        assertThat(v.shape()).isEqualTo(SHAPE);
        CollectingSink s = new CollectingSink((int) SHAPE.bytes(), windows, windows);
        v.copyTo(s);
        out.add(s.bytes());
        ids.add(v.record());
      }
    }
    return out;
  }

  /**
   * Reads every volume of {@code in} (through in-place windows or copies), checking volume {@code n}
   * against {@code volume(n % 4)}, as {@link #write} made it; returns how many there were.
   */
  static int readEach(ParquetVolumeInput in, boolean windows, String label) {
    int n = 0;
    VolumeSource vs;
    while ((vs = in.next(PageGate.UNLIMITED)) != null) {
      CollectingSink s = new CollectingSink((int) SHAPE.bytes(), windows, windows);
      vs.copyTo(s);
      assertThat(s.bytes()).as("%svolume %d", label, n).isEqualTo(volume(n % 4, SHAPE));
      n++;
    }
    return n;
  }

  @ParameterizedTest(name = "{0} {1} dictionary={2}")
  @MethodSource("variants")
  void binaryLayoutComesBackByteForByte(CompressionCodecName c, ParquetProperties.WriterVersion v, boolean dict,
      @TempDir Path dir) throws IOException {
    Path p = write(dir, BINARY, 23, c, v, dict);
    TensorLayout layout = TensorLayout.detect(BINARY, null, null);
    for (boolean windows : new boolean[] {true, false}) {
      List<String> ids = new ArrayList<>();
      List<byte[]> got = readAll(p, layout, windows, ids);
      assertThat(got).hasSize(23);
      for (int i = 0; i < 23; i++) {
        assertThat(got.get(i)).as("volume %d (windows=%s)", i, windows).isEqualTo(volume(i % 4, SHAPE));
        assertThat(ids.get(i)).isEqualTo("id=v" + i);
      }
    }
  }

  @ParameterizedTest(name = "{0} {1} dictionary={2}")
  @MethodSource("variants")
  void floatListLayoutSpanningPagesComesBackByteForByte(CompressionCodecName c, ParquetProperties.WriterVersion v,
      boolean dict, @TempDir Path dir) throws IOException {
    Path p = write(dir, FLOATS, 9, c, v, dict);
    TensorLayout layout = TensorLayout.detect(FLOATS, null, SHAPE);
    for (boolean windows : new boolean[] {true, false}) {
      List<byte[]> got = readAll(p, layout, windows, new ArrayList<>());
      assertThat(got).hasSize(9);
      for (int i = 0; i < 9; i++) {
        assertThat(got.get(i)).as("volume %d (windows=%s)", i, windows).isEqualTo(volume(i % 4, SHAPE));
      }
    }
  }

  /**
   * Compressed pages decompressed whole are read into the reader's two direct buffers and decompressed
   * from one into the other, reused page after page: a fresh buffer per page made the collector run
   * all the time on Spark's 19 MiB pages. 23 rows in pages of at most 3 rows: 8 pages or
   * more, 2 allocations. (Snappy's PLAIN pages are decoded in place: the next tests.)
   */
  @ParameterizedTest(name = "{0} {1} dictionary={2}")
  @MethodSource("compressed")
  void compressedPagesReuseTheReadersBuffers(CompressionCodecName c, ParquetProperties.WriterVersion v, boolean dict,
      @TempDir Path dir) throws IOException {
    Path p = write(dir, BINARY, 23, c, v, dict);
    try (ParquetVolumeInput in = new ParquetVolumeInput(List.of(new ParquetSplit(p.toUri().toString(), "", 0,
        p.toFile().length())), TensorLayout.detect(BINARY, null, null), new Configuration(), new PhaseTimes())) {
      assertThat(readEach(in, false, "")).isEqualTo(23);
      // at least one: the compressed path ran; at most two: compressed and decompressed, grown once
      assertThat(in.scratchTakes()).as("direct page buffers taken").isBetween(1L, 2L);
    }
  }

  /**
   * A reader gives its page buffers back when it closes and the next one (the next task of the
   * executor) takes them: a fresh pair per task cost as much as reading its pages.
   */
  @Test
  void theNextReaderTakesTheBuffersTheLastOneGaveBack(@TempDir Path dir) throws IOException {
    Path p = write(dir, BINARY, 23, CompressionCodecName.ZSTD, ParquetProperties.WriterVersion.PARQUET_1_0, false);
    List<ParquetSplit> splits = List.of(new ParquetSplit(p.toUri().toString(), "", 0, p.toFile().length()));
    TensorLayout layout = TensorLayout.detect(BINARY, null, null);
    long[] allocated = new long[3];
    for (int task = 0; task < 3; task++) {
      long before = io.volpool.memory.PageBuffers.allocations();
      try (ParquetVolumeInput in = new ParquetVolumeInput(splits, layout, new Configuration(), new PhaseTimes())) {
        assertThat(readEach(in, false, "task " + task + " ")).isEqualTo(23);
        assertThat(in.scratchTakes()).as("task %d took page buffers", task).isPositive();
      }
      allocated[task] = io.volpool.memory.PageBuffers.allocations() - before;
    }
    assertThat(allocated[1]).as("buffers allocated by the second reader of the same file").isZero();
    assertThat(allocated[2]).as("buffers allocated by the third").isZero();
  }

  static Stream<Arguments> compressed() {
    return variants().filter(a -> {
      CompressionCodecName c = (CompressionCodecName) a.get()[0];
      return c == CompressionCodecName.ZSTD || c == CompressionCodecName.LZ4_RAW;
    });
  }

  /** Volume {@code i} of the pyarrow files in {@code resources/parquet} (made by the script in its README). */
  static byte[] pyarrowVolume(int i) {
    ByteBuffer b = ByteBuffer.allocate(120 * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (long k = 0; k < 120; k++) {
      b.putFloat(i % 3 == 0 ? (float) ((k % 7) * 0.5 + i) : (float) (((k * 2654435761L + i * 97L) % 100003) / 1000.0));
    }
    return b.array();
  }

  /** A local filesystem under another scheme: volpool reads it through Hadoop's streams, as it reads HDFS or S3. */
  public static final class OtherScheme extends org.apache.hadoop.fs.RawLocalFileSystem {
    @Override
    public java.net.URI getUri() {
      return java.net.URI.create("vtest:///");
    }

    @Override
    public String getScheme() {
      return "vtest";
    }
  }

  /**
   * A local file's Snappy pages that hardly compress (random floats, what measured data usually is)
   * take no page buffer at all: each is decoded from its mapping straight into the sink.
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("incompressible")
  void incompressibleSnappyPagesOfALocalFileTakeNoPageBuffer(String layoutName, ParquetProperties.WriterVersion v,
      @TempDir Path dir) throws IOException {
    boolean binary = layoutName.equals("binary");
    int rows = binary ? 23 : 9;
    Path p = write(dir, binary ? BINARY : FLOATS, rows, CompressionCodecName.SNAPPY, v, false);
    TensorLayout layout = binary ? TensorLayout.detect(BINARY, null, null) : TensorLayout.detect(FLOATS, null, SHAPE);
    try (ParquetVolumeInput in = new ParquetVolumeInput(List.of(new ParquetSplit(p.toUri().toString(), "", 0,
        p.toFile().length())), layout, new Configuration(), new PhaseTimes())) {
      assertThat(readEach(in, true, "")).isEqualTo(rows);
      assertThat(in.snappyStreamed()).as("pages decoded in place").isGreaterThanOrEqualTo(3);
      assertThat(in.wholePages()).as("pages decompressed whole").isZero();
      assertThat(in.scratchTakes()).as("page buffers taken").isZero();
    }
  }

  /** parquet-mr writes binary values PLAIN in V1 pages only (V2: delta), floats PLAIN in both. */
  static Stream<Arguments> incompressible() {
    return Stream.of(Arguments.of("binary", ParquetProperties.WriterVersion.PARQUET_1_0),
        Arguments.of("floats", ParquetProperties.WriterVersion.PARQUET_1_0),
        Arguments.of("floats", ParquetProperties.WriterVersion.PARQUET_2_0));
  }

  static Stream<Arguments> pyarrowSnappy() {
    List<Arguments> out = new ArrayList<>();
    for (String f : new String[] {"snappy-binary-v1", "snappy-binary-v2", "snappy-floats-v1", "snappy-floats-v2"}) {
      for (boolean local : new boolean[] {true, false}) {
        out.add(Arguments.of(f, local));
      }
    }
    return out.stream();
  }

  /**
   * Snappy pages of PLAIN values (pyarrow's and Spark's default codec; pages V1 and V2, levels for
   * nullable columns and lists spanning pages) that hardly compress are decoded as they are read,
   * straight into the sink (from a local file's mapping, or another filesystem's bytes in the raw
   * buffer), and those that compress are decompressed whole: every volume comes back byte for byte
   * either way.
   */
  @ParameterizedTest(name = "{0} local={1}")
  @MethodSource("pyarrowSnappy")
  void snappyPagesAreDecodedStraightIntoTheSink(String name, boolean local, @TempDir Path dir) throws Exception {
    Path p = dir.resolve(name + ".parquet");
    try (java.io.InputStream in = getClass().getResourceAsStream("/parquet/" + name + ".parquet")) {
      Files.copy(in, p);
    }
    Configuration conf = new Configuration();
    conf.set("fs.vtest.impl", OtherScheme.class.getName());
    conf.setBoolean("fs.vtest.impl.disable.cache", true);
    String uri = local ? p.toUri().toString() : "vtest://" + p.toUri().getPath();
    VolumeShape shape = new VolumeShape(2, 3, 4, 5);
    MessageType schema;
    try (org.apache.parquet.hadoop.ParquetFileReader r = org.apache.parquet.hadoop.ParquetFileReader.open(
        org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(uri), conf))) {
      schema = r.getFooter().getFileMetaData().getSchema();
    }
    TensorLayout layout = TensorLayout.detect(schema, null, name.contains("floats") ? shape : null);
    for (boolean windows : new boolean[] {true, false}) {
      try (ParquetVolumeInput in = new ParquetVolumeInput(List.of(new ParquetSplit(uri, "", 0, p.toFile().length())),
          layout, conf, new PhaseTimes())) {
        int n = 0;
        VolumeSource v;
        while ((v = in.next(PageGate.UNLIMITED)) != null) {
          assertThat(v.shape()).isEqualTo(shape);
          CollectingSink s = new CollectingSink((int) shape.bytes(), windows, windows);
          v.copyTo(s);
          assertThat(s.bytes()).as("volume %d of %s (windows=%s)", n, name, windows).isEqualTo(pyarrowVolume(n));
          assertThat(v.record()).isEqualTo(name.contains("binary") ? "id=v" + n : v.record());
          n++;
        }
        assertThat(n).isEqualTo(11);
        if (name.endsWith("v1")) {
          // (pyarrow stores a V2 page that does not compress uncompressed, flagged so: streamed from the file)
          assertThat(in.snappyStreamed()).as("Snappy pages decoded in place").isPositive();
        }
        assertThat(in.wholePages()).as("compressible Snappy pages decompressed whole").isPositive();
      }
    }
  }

  @Test
  void rowGroupsAreSplitByTheirMiddle(@TempDir Path dir) throws IOException {
    Path p = write(dir, BINARY, 40, CompressionCodecName.UNCOMPRESSED, ParquetProperties.WriterVersion.PARQUET_1_0, false);
    long len = p.toFile().length();
    TensorLayout layout = TensorLayout.detect(BINARY, null, null);
    int total = 0;
    long cut = len / 3;
    for (long[] r : new long[][] {{0, cut}, {cut, len - cut}}) {
      try (ParquetVolumeInput in = new ParquetVolumeInput(List.of(new ParquetSplit(p.toUri().toString(), "", r[0], r[1])),
          layout, new Configuration(), new PhaseTimes())) {
        VolumeSource v;
        while ((v = in.next(PageGate.UNLIMITED)) != null) {
          v.shape();
          v.copyTo(new CollectingSink((int) SHAPE.bytes(), false, false));
          total++;
        }
      }
    }
    assertThat(total).as("every row read by exactly one of two splits").isEqualTo(40);
  }

  @Test
  void aNullTensorIsABadRecordNamingTheRow(@TempDir Path dir) throws IOException {
    Path p = dir.resolve("nulls.parquet");
    SimpleGroupFactory f = new SimpleGroupFactory(BINARY);
    try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new org.apache.hadoop.fs.Path(p.toUri()))
        .withConf(new Configuration()).withType(BINARY).build()) {
      Group g = f.newGroup().append("id", "empty");
      Group list = g.addGroup("shape");
      for (int d : SHAPE.toArray()) {
        list.addGroup("list").append("element", d);
      }
      g.append("dtype", "float32");
      w.write(g);
    }
    try (ParquetVolumeInput in = new ParquetVolumeInput(List.of(new ParquetSplit(p.toUri().toString(), "", 0,
        Files.size(p))), TensorLayout.detect(BINARY, null, null), new Configuration(), new PhaseTimes())) {
      VolumeSource v = in.next(PageGate.UNLIMITED);
      assertThatThrownBy(v::shape).isInstanceOf(BadRecordException.class).hasMessage("bad record id=empty: data is null");
    }
  }

  @Test
  void aFileWithAnotherSchemaIsNamed(@TempDir Path dir) throws IOException {
    Path p = write(dir, FLOATS, 1, CompressionCodecName.SNAPPY, ParquetProperties.WriterVersion.PARQUET_1_0, false);
    TensorLayout layout = TensorLayout.detect(BINARY, null, null);
    try (ParquetVolumeInput in = new ParquetVolumeInput(List.of(new ParquetSplit(p.toUri().toString(), "", 0,
        Files.size(p))), layout, new Configuration(), new PhaseTimes())) {
      assertThatThrownBy(() -> in.next(PageGate.UNLIMITED)).isInstanceOf(BadRecordException.class)
          .hasMessageContaining(p.getFileName().toString())
          .hasMessageContaining("its schema differs from the input's first file: no column 'label'");
    }
  }
}
