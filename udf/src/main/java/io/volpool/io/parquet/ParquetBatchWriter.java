package io.volpool.io.parquet;

import io.volpool.format.Dtype;
import io.volpool.io.ChannelOutputFile;
import io.volpool.io.OutputSpec;
import io.volpool.io.VolumeSource;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.bytes.HeapByteBufferAllocator;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnWriteStore;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.CodecFactory;
import org.apache.parquet.hadoop.ColumnChunkPageWriteStore;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.ColumnIOFactory;
import org.apache.parquet.io.MessageColumnIO;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.apache.parquet.schema.Type;

/**
 * Writes one Parquet file of output volumes with parquet-hadoop's file writer, one row group per
 * batch or more: the small columns (pass-through, shape, dtype) go through parquet's column
 * writers; the tensor column is written by hand, one PLAIN page per volume, straight from the
 * batch's output buffer (pinned on the GPU): the 4-byte length prefix goes into the gap the backend
 * left before each volume, so a page is one contiguous slice and no volume is copied to the heap
 * (unless a codec compresses it). No statistics, dictionary or page index for the tensor column.
 * Owned by the task's output writer; {@link #close()} writes the footer.
 */
public final class ParquetBatchWriter implements AutoCloseable {
  /** The gap the backend leaves before each output volume: the PLAIN length prefix. */
  public static final int GAP = 4;

  private final MessageType schema;
  private final MessageType small;
  private final List<String> passthrough;
  /** The output has an id column the input rows do not carry: it is written from each volume's {@code outputId()}. */
  private final boolean idFromSource;
  private final ColumnDescriptor data;
  private final CompressionCodecName codec;
  private final CodecFactory codecs;
  private final ParquetFileWriter file;
  private final OutputSpec spec;
  private final PhaseTimes times;
  private final String path;
  private long rows;
  private long volumeStarts;
  /** Set to each page's kind before it is written: parquet checksums a page in place when the kinds agree. */
  private final SameKindBuffers crcBuffers = new SameKindBuffers();

  /**
   * The allocator parquet's page checksum copies a page into when the page's buffer is not of the
   * allocator's kind (direct or heap); {@link #direct} is set to the page's kind, so it never copies
   * (a pinned GPU output page was copied to the heap to be checksummed).
   */
  private static final class SameKindBuffers implements org.apache.parquet.bytes.ByteBufferAllocator {
    boolean direct;

    @Override
    public ByteBuffer allocate(int size) {
      return direct ? ByteBuffer.allocateDirect(size) : ByteBuffer.allocate(size);
    }

    @Override
    public void release(ByteBuffer b) {
      io.volpool.memory.DirectBuffers.free(b);
    }

    @Override
    public boolean isDirect() {
      return direct;
    }
  }

  public ParquetBatchWriter(Path path, OutputSpec spec, Configuration conf, PhaseTimes times) throws IOException {
    this.spec = spec;
    this.times = times;
    this.path = path.toString();
    this.schema = MessageTypeParser.parseMessageType(spec.schema());
    List<Type> fields = schema.getFields();
    this.small = new MessageType(schema.getName(), fields.subList(0, fields.size() - 1));
    this.passthrough = spec.passthrough();
    this.idFromSource = small.containsField(TensorLayout.ID) && !passthrough.contains(TensorLayout.ID);
    this.data = schema.getColumnDescription(new String[] {TensorLayout.DATA});
    this.codec = CompressionCodecName.valueOf(spec.codec());
    this.codecs = new CodecFactory(conf, 1 << 20);
    this.file = new ParquetFileWriter(ChannelOutputFile.of(path, conf), schema, ParquetFileWriter.Mode.CREATE,
        spec.rowGroupBytes(), 0, null, ParquetProperties.builder().withPageWriteChecksumEnabled(true)
            .withAllocator(crcBuffers).build());
    file.start();
  }

  /** Rows written so far. */
  public long rows() {
    return rows;
  }

  /** Rows written so far that start a volume (plane 0): the volumes written, whatever the layout. */
  public long volumeStarts() {
    return volumeStarts;
  }

  /**
   * Writes the volumes of a finished batch as one row group.
   *
   * @param items the batch's sources (Parquet rows or .npy volumes), for their pass-through values
   * @param out the batch output; volume {@code i} at {@code offsets[i]}, with {@link #GAP} writable bytes before it
   */
  public void write(List<VolumeSource> items, VolumeShape outShape, ByteBuffer out, long[] offsets) throws IOException {
    write(items, outShape, Dtype.FLOAT32, out, offsets, null);
  }

  /** One output row: planes {@code [d0, d1)} of item {@code item}; {@code contiguous} when they lie together at its offset. */
  private record OutRow(int item, int d0, int d1, boolean contiguous) {}

  /**
   * Writes rows as one row group. With {@code planes}, row {@code i} holds planes
   * {@code [planes[i][0], planes[i][1])} of every channel of a volume of shape {@code outShape}, as
   * item {@code i}'s output. Without, each item is a whole volume: one row, or, when the schema has
   * {@code d0}/{@code d1} and the volume holds more than {@link OutputSpec#rowBytes}, several rows of
   * whole planes (gathered channel by channel from the volume).
   */
  public void write(List<VolumeSource> items, VolumeShape outShape, Dtype dtype, ByteBuffer out, long[] offsets,
      int[][] planes) throws IOException {
    long t0 = System.nanoTime();
    for (VolumeSource v : items) {
      inputDtypes.add(v.storedDtype().toString());
    }
    boolean planeRows = small.containsField(TensorLayout.D0);
    if (planes != null && !planeRows) {
      throw new IllegalStateException("rows of a volume stored across rows, but the output schema has no d0/d1 columns");
    }
    long planeBytes = (long) outShape.c() * outShape.h() * outShape.w() * dtype.itemSize();
    int od = outShape.d();
    List<OutRow> outRows = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      if (planes != null) {
        outRows.add(new OutRow(i, planes[i][0], planes[i][1], true));
      } else if (planeRows && outShape.numel() * dtype.itemSize() > spec.rowBytes()) {
        int per = (int) Math.max(1, spec.rowBytes() / planeBytes);
        for (int d0 = 0; d0 < od; d0 += per) {
          outRows.add(new OutRow(i, d0, Math.min(od, d0 + per), false));
        }
      } else {
        outRows.add(new OutRow(i, 0, od, true));
      }
    }
    int n = outRows.size();
    ParquetProperties props = ParquetProperties.builder().withPageWriteChecksumEnabled(true).build();
    CodecFactory.BytesCompressor compressor = codecs.getCompressor(codec);
    ColumnChunkPageWriteStore pages = new ColumnChunkPageWriteStore(compressor, small, new HeapByteBufferAllocator(),
        ParquetProperties.DEFAULT_COLUMN_INDEX_TRUNCATE_LENGTH, true);
    ColumnWriteStore columns = props.newColumnWriteStore(small, pages);
    MessageColumnIO io = new ColumnIOFactory().getColumnIO(small);
    RecordConsumer rc = io.getRecordWriter(columns);
    Binary dtypeName = Binary.fromString(dtype.numpyName());
    int[] shape = outShape.toArray();
    int shapeField = small.getFieldIndex(TensorLayout.SHAPE);
    int dtypeField = small.getFieldIndex(TensorLayout.DTYPE);
    for (OutRow r : outRows) {
      rc.startMessage();
      writePassthrough(rc, items.get(r.item()));
      rc.startField(TensorLayout.SHAPE, shapeField);
      rc.startGroup();
      rc.startField("list", 0);
      for (int d : shape) {
        rc.startGroup();
        rc.startField("element", 0);
        rc.addInteger(d);
        rc.endField("element", 0);
        rc.endGroup();
      }
      rc.endField("list", 0);
      rc.endGroup();
      rc.endField(TensorLayout.SHAPE, shapeField);
      rc.startField(TensorLayout.DTYPE, dtypeField);
      rc.addBinary(dtypeName);
      rc.endField(TensorLayout.DTYPE, dtypeField);
      if (planeRows) {
        int[] pr = {r.d0(), r.d1()};
        for (int k = 0; k < 2; k++) {
          String name = k == 0 ? TensorLayout.D0 : TensorLayout.D1;
          int field = small.getFieldIndex(name);
          rc.startField(name, field);
          rc.addInteger(pr[k]);
          rc.endField(name, field);
        }
      }
      rc.endMessage();
    }
    // nulls of nested pass-through values (a null struct) are cached by the record consumer until flushed
    rc.flush();
    columns.flush();
    long t1 = times.lap(Phase.ENCODE, t0);
    file.startBlock(n);
    pages.flushToFileWriter(file);
    columns.close();
    pages.close();
    file.startColumn(data, n, codec);
    Statistics<?> none = Statistics.noopStats(data.getPrimitiveType());
    ByteBuffer gather = null;
    long hw4 = (long) outShape.h() * outShape.w() * dtype.itemSize();
    for (OutRow r : outRows) {
      int ob = (int) ((r.d1() - r.d0()) * planeBytes);
      ByteBuffer page;
      if (r.contiguous()) {
        int at = (int) offsets[r.item()] - GAP;
        out.order(ByteOrder.LITTLE_ENDIAN).putInt(at, ob);
        page = out.slice(at, GAP + ob);
      } else {
        // planes [d0, d1) of every channel of a whole volume: gathered into one row's bytes
        long tg = System.nanoTime();
        if (gather == null || gather.capacity() < GAP + ob) {
          gather = ByteBuffer.allocate(GAP + ob).order(ByteOrder.LITTLE_ENDIAN);
        }
        gather.clear();
        gather.putInt(ob);
        int span = (int) ((r.d1() - r.d0()) * hw4);
        for (int c = 0; c < outShape.c(); c++) {
          int from = (int) (offsets[r.item()] + (c * (long) od + r.d0()) * hw4);
          gather.put(out.slice(from, span));
        }
        gather.flip();
        page = gather;
        times.add(Phase.ENCODE, System.nanoTime() - tg);
      }
      // a page as a ByteBuffer, heap or direct: parquet checksums it in place (crcBuffers of the page's kind). As
      // an array, its checksum took a copy into a buffer each file's writer allocated afresh (a range's output row
      // of 64 MiB: 64 MiB zeroed and faulted in per task), and a write of it over 1 MiB a temporary direct buffer
      // of its size inside the JDK; as a ByteBuffer parquet writes it 8 KiB at a time into the stream's buffer
      BytesInput bytes = BytesInput.from(page);
      if (codec != CompressionCodecName.UNCOMPRESSED) {
        long tc = System.nanoTime();
        bytes = BytesInput.copy(compressor.compress(bytes));
        times.add(Phase.ENCODE, System.nanoTime() - tc);
      }
      // a compressed page is a heap array by now
      crcBuffers.direct = codec == CompressionCodecName.UNCOMPRESSED && page.isDirect();
      writePage(bytes, GAP + ob, none);
      if (r.d0() == 0) {
        volumeStarts++;
      }
    }
    file.endColumn();
    file.endBlock();
    rows += n;
    times.lap(Phase.WRITE, t1);
  }

  @SuppressWarnings("deprecation")
  private void writePage(BytesInput bytes, int uncompressed, Statistics<?> none) throws IOException {
    // the overload without row counts: no column or offset index for the tensor column (min/max of tensors is useless)
    file.writeDataPage(1, uncompressed, bytes, none, Encoding.RLE, Encoding.RLE, Encoding.PLAIN);
  }

  private void writePassthrough(RecordConsumer rc, VolumeSource v) {
    if (idFromSource) {
      // .npy input, or Parquet input without an id column: the id names the volume (path or path[i])
      int idField = small.getFieldIndex(TensorLayout.ID);
      rc.startField(TensorLayout.ID, idField);
      rc.addBinary(Binary.fromString(v.outputId()));
      rc.endField(TensorLayout.ID, idField);
    }
    Group g = v.passThrough();
    if (passthrough.isEmpty() || g == null) {
      return;
    }
    GroupType gt = g.getType();
    for (String name : passthrough) {
      int src = gt.getFieldIndex(name);
      int dst = small.getFieldIndex(name);
      int count = g.getFieldRepetitionCount(src);
      if (count == 0) {
        continue;
      }
      Type t = gt.getType(src);
      rc.startField(name, dst);
      for (int k = 0; k < count; k++) {
        if (t.isPrimitive()) {
          g.writeValue(src, k, rc);
        } else {
          rc.startGroup();
          writeGroup(rc, g.getGroup(src, k));
          rc.endGroup();
        }
      }
      rc.endField(name, dst);
    }
  }

  private static void writeGroup(RecordConsumer rc, Group g) {
    GroupType type = g.getType();
    for (int f = 0; f < type.getFieldCount(); f++) {
      int count = g.getFieldRepetitionCount(f);
      if (count == 0) {
        continue;
      }
      Type t = type.getType(f);
      rc.startField(t.getName(), f);
      for (int k = 0; k < count; k++) {
        if (t.isPrimitive()) {
          g.writeValue(f, k, rc);
        } else {
          rc.startGroup();
          writeGroup(rc, g.getGroup(f, k));
          rc.endGroup();
        }
      }
      rc.endField(t.getName(), f);
    }
  }

  /** The footer key naming the task (its index in the run's plan) that wrote the file. */
  public static final String TASK_KEY = "volpool.task";
  /** The footer key of the stored dtypes of the file's volumes (the summary's provenance uses it for the run's). */
  public static final String INPUT_DTYPES_KEY = "volpool.input.dtypes";
  /** The footer key of the run's fingerprint (input and settings): a resumed run keeps files of its own only. */
  public static final String FINGERPRINT_KEY = "volpool.fingerprint";

  /** The task of the plan writing this file, for its footer; -1 (none) for a file the driver writes. */
  private int task = -1;

  /** Says in the footer that task {@code index} of the plan wrote this file: a resumed run checks a kept task's files by it. */
  public void task(int index) {
    this.task = index;
  }

  /** The stored dtypes of the volumes written to this file, for its footer. */
  private final java.util.TreeSet<String> inputDtypes = new java.util.TreeSet<>();

  /** Writes the footer (with the spec's metadata and the input dtypes of its volumes) and closes the file. */
  @Override
  public void close() throws IOException {
    long t0 = System.nanoTime();
    try {
      java.util.Map<String, String> meta = new java.util.LinkedHashMap<>(spec.metadata());
      meta.put(INPUT_DTYPES_KEY, String.join(",", inputDtypes));
      if (task >= 0) {
        meta.put(TASK_KEY, String.valueOf(task));
      }
      file.end(meta);
    } finally {
      codecs.release();
      times.add(Phase.WRITE, System.nanoTime() - t0);
    }
  }

  public String path() {
    return path;
  }
}
