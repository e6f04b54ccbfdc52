package io.volpool.io.parquet;

import io.volpool.io.BadRecordException;
import io.volpool.io.ByteSource;
import io.volpool.io.CorruptInputException;
import io.volpool.io.Files2;
import io.volpool.io.PageGate;
import io.volpool.io.PositionedPlanes;
import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
import io.volpool.io.InputRescale;
import io.volpool.io.RowRules;
import io.volpool.backend.WideningSink;
import io.volpool.io.VolumeInput;
import io.volpool.io.VolumeSource;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.VolumeSink;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.hadoop.CodecFactory;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.io.ColumnIOFactory;
import org.apache.parquet.io.MessageColumnIO;
import org.apache.parquet.io.RecordReader;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;

/**
 * The volumes of a task's Parquet splits, read with parquet-hadoop and no Spark rows: per row
 * group, the small columns (id, shape, dtype, pass-through) are assembled into records with
 * parquet's example {@link Group}s, and the tensor column is read page by page by a
 * {@link TensorColumnReader} straight into batch buffers. Each file's schema must match the layout
 * planned from the first file. Only schemas volpool builds are used: nothing named in a file's
 * metadata is ever loaded as a class.
 */
public final class ParquetVolumeInput implements VolumeInput {
  private final List<ParquetSplit> splits;
  private final FooterCache footers;
  private final TensorLayout layout;
  private final InputRescale rescale;
  private final Configuration conf;
  private final PhaseTimes times;
  private final CodecFactory codecs;
  private final MessageType rowSchema;
  private final ColumnDescriptor leaf;
  private int nextSplit;
  private ParquetSplit split;
  private ParquetFileReader rows;
  private ByteSource data;
  private TensorColumnReader tensor;
  private List<BlockMetaData> blocks;
  private int block = -1;
  private long rowInBlock;
  private long rowsInBlock;
  private long rowInFile;
  private RecordReader<Group> records;
  private Group pendingRow;
  private boolean pendingRowRead;
  private long volumes;
  private PageGate gate = PageGate.UNLIMITED;
  private Row last;

  /** The rows of the task's splits as the driver planned them (0 when any split's count is unknown). */
  @Override
  public long volumesAtMost() {
    return volumesAtMost(splits);
  }

  /** The rows of {@code splits} as the driver planned them (0 when any split's count is unknown). */
  public static long volumesAtMost(List<ParquetSplit> splits) {
    long n = 0;
    for (ParquetSplit s : splits) {
      if (s.rows() <= 0) {
        return 0;
      }
      n += s.rows();
    }
    return n;
  }

  /** The input of {@code splits}, values as stored (no rescale). */
  public ParquetVolumeInput(List<ParquetSplit> splits, TensorLayout layout, Configuration conf, PhaseTimes times) {
    this(splits, layout, InputRescale.NONE, conf, times);
  }

  /** The input of {@code splits}, each value rescaled as {@code rescale} says for its row. */
  public ParquetVolumeInput(List<ParquetSplit> splits, TensorLayout layout, InputRescale rescale, Configuration conf,
      PhaseTimes times) {
    this(splits, layout, rescale, conf, times, null);
  }

  /** As above, the files' footers from {@code footers} (parsed once for many inputs of one file's splits), if not null. */
  ParquetVolumeInput(List<ParquetSplit> splits, TensorLayout layout, InputRescale rescale, Configuration conf,
      PhaseTimes times, FooterCache footers) {
    this.footers = footers;
    this.splits = splits;
    this.rescale = rescale;
    this.layout = layout;
    this.conf = conf;
    this.times = times;
    this.codecs = new CodecFactory(conf, 1 << 20);
    this.rowSchema = layout.rowSchema();
    this.leaf = layout.tensorLeaf();
  }

  /** Widens the rows' stored values on their way into a float32 batch: one for the input, its buffers made once. */
  private final WideningSink widening = WideningSink.reusable();

  /** One row of the input: its small columns and its place in the file. */
  public final class Row implements VolumeSource {
    private final Group group;
    private final String record;
    private final ParquetSplit from;
    private final long index;
    private VolumeShape shape;
    private VolumeShape whole;
    private int[] planes;
    private int dataLength = -1;
    private ValueType type = ValueType.FLOAT32;
    private Rescale scale = Rescale.IDENTITY;
    private boolean consumed;

    Row(Group group, String record, ParquetSplit from, long index) {
      this.group = group;
      this.record = record;
      this.from = from;
      this.index = index;
    }

    /** The row's small columns (the row schema of the layout), or null when the file has none. */
    public Group group() {
      return group;
    }

    /** The split the row came from (its folder is kept in the output). */
    public ParquetSplit split() {
      return from;
    }

    @Override
    public String outputFolder() {
      return from.relative();
    }

    @Override
    public Group passThrough() {
      return group;
    }

    /**
     * The row's id column when it has one (an output file named by volume takes it); in a file without
     * an id column, its path below the input root and its row, {@code sub/file.parquet[3]}, as a .npy
     * file's volumes are named; else (a null id) its record.
     */
    @Override
    public String outputId() {
      String id = RowValues.id(group);
      if (id != null) {
        return id;
      }
      if (group == null || !group.getType().containsField(TensorLayout.ID)) {
        String name = from.path().substring(from.path().lastIndexOf('/') + 1);
        return (from.relative().isEmpty() ? "" : from.relative() + "/") + name + "[" + index + "]";
      }
      return record;
    }

    @Override
    public String record() {
      return record;
    }

    @Override
    public String filePath() {
      return from.path();
    }

    @Override
    public long rowInFile() {
      return index;
    }

    @Override
    public VolumeShape shape() {
      if (shape == null) {
        if (!layout.isBinary()) {
          type = layout.listStored();
        }
        shape = layout.isBinary() ? binaryShape() : layout.fixedShape();
        if (whole == null) {
          whole = shape;
        }
        scale = rescale.of(record, column -> RowValues.number(group, column, record));
      }
      return shape;
    }

    /**
     * For volumes stored across rows: the planes {@code [d0, d1)} this row holds (its {@link #shape()}
     * is then {@code [C, d1 - d0, H, W]}); null for a row holding a whole volume.
     */
    public int[] planes() {
      shape();
      return planes;
    }

    /** The shape of the whole volume: the {@code shape} column (for a row holding a whole volume, {@link #shape()}). */
    public VolumeShape wholeShape() {
      shape();
      return whole;
    }

    private VolumeShape binaryShape() {
      long t0 = System.nanoTime();
      VolumeShape s = RowRules.shape(record, RowValues.longList(group, TensorLayout.SHAPE));
      whole = s;
      if (layout.planeRows()) {
        planes = RowRules.planes(record, s, RowValues.integer(group, TensorLayout.D0), RowValues.integer(group, TensorLayout.D1));
        s = new VolumeShape(s.c(), planes[1] - planes[0], s.h(), s.w());
      }
      type = RowRules.dtype(record, RowValues.string(group, TensorLayout.DTYPE));
      if (!tensor.isValue()) {
        tensor.skipNull();
        consumed = true;
        throw new BadRecordException(record, "data is null");
      }
      dataLength = tensor.binaryLength();
      RowRules.length(record, s, type, dataLength);
      times.add(Phase.DECODE, System.nanoTime() - t0);
      return s;
    }

    @Override
    public long storedBytes() {
      shape();
      return layout.isBinary() ? dataLength : shape.numel() * type.itemSize();
    }

    @Override
    public ValueType storedDtype() {
      shape();
      return layout.isBinary() ? type : layout.listDtype();
    }

    /** Whether the row's tensor has been read or stepped over (it can be read once). */
    public boolean consumed() {
      return consumed;
    }

    /**
     * Where the row's value starts in its file when it is stored plainly (an uncompressed PLAIN binary
     * value, streamed from the file), else -1. Reads nothing of the value.
     */
    public long plainValueAt() {
      shape();
      return layout.isBinary() ? tensor.streamedValueAt() : -1;
    }

    /**
     * The row's planes ({@link #shape()}: of a volume stored across rows, the planes this row holds) read
     * by position from {@code file}, another handle on the row's file so that this reader's own position
     * is left alone; the row is stepped over. Null where {@link #plainValueAt()} is -1.
     */
    public PositionedPlanes positionedRow(io.volpool.io.ByteSource file) {
      long at = plainValueAt();
      if (at < 0) {
        return null;
      }
      consumed = true;
      tensor.skipStreamed();
      return new PositionedPlanes(file, at, shape, record, type, scale);
    }

    @Override
    public io.volpool.backend.PlaneSource positionedPlanes() {
      shape();
      if (!layout.isBinary() || layout.planeRows() || !type.isFloat32() || !scale.isIdentity()) {
        return null;
      }
      return positionedRow(data);
    }

    @Override
    public ValueType valueType() {
      shape();
      return type;
    }

    @Override
    public Rescale rescale() {
      shape();
      return scale;
    }

    @Override
    public void copyStoredTo(VolumeSink dst) {
      VolumeShape s = shape();
      consumed = true;
      if (layout.isBinary()) {
        tensor.copyBinary(dst);
      } else {
        copyList(dst, s);
      }
    }

    private void copyList(VolumeSink dst, VolumeShape s) {
      long n = tensor.copyListRow(dst, s.numel(), record, layout.tensorColumn(), gate);
      if (n != s.numel()) {
        throw new BadRecordException(record, "tensor column '" + layout.tensorColumn() + "' holds " + n
            + " values but its fixed shape " + s + " needs " + s.numel());
      }
    }

    @Override
    public void copyTo(VolumeSink dst) {
      VolumeShape s = shape();
      consumed = true;
      if (layout.isBinary()) {
        tensor.copyBinary(widening.to(dst, type, scale));
      } else {
        copyList(widening.to(dst, type, scale), s);
      }
    }
  }

  @Override
  public Row next(PageGate gate) {
    this.gate = gate;
    if (last != null && !last.consumed) {
      // the last row was rejected or skipped before its tensor was read: step over it
      last.consumed = true;
      tensor.skipRow(gate);
    }
    while (true) {
      if (!pendingRowRead) {
        if (!advanceRow()) {
          return null;
        }
      }
      if (!tensor.ensure(gate, false)) {
        throw new PageGate.Refused();
      }
      long row = rowInFile - 1; // counted as read: 0 for the file's first row
      if (tensor.repetition() != 0) {
        throw new CorruptInputException(split.path() + ": column " + String.join(".", leaf.getPath())
            + " does not start a new row where row " + row + " begins");
      }
      pendingRowRead = false;
      volumes++;
      String id = RowValues.id(pendingRow);
      String rec = id != null ? "id=" + id : "row " + row + " of " + split.path();
      last = new Row(pendingRow, rec, split, row);
      return last;
    }
  }

  /** Moves to the next row (opening row groups and files as needed); false at the end. */
  private boolean advanceRow() {
    while (rows == null || rowInBlock >= rowsInBlock) {
      if (rows != null && !nextBlock()) {
        closeFile();
      }
      if (rows == null) {
        if (nextSplit >= splits.size()) {
          return false;
        }
        openFile(splits.get(nextSplit++));
        if (!nextBlock()) {
          closeFile();
        }
      }
    }
    long t0 = System.nanoTime();
    pendingRow = records == null ? null : records.read();
    rowInBlock++;
    rowInFile++;
    pendingRowRead = true;
    times.add(Phase.DECODE, System.nanoTime() - t0);
    return true;
  }

  private void openFile(ParquetSplit s) {
    long t0 = System.nanoTime();
    split = s;
    Path p = new Path(s.path());
    try {
      if (footers != null) {
        rows = footers.open(s, p, Files2.parquet(p, conf), conf);
      } else {
        ParquetReadOptions opts = HadoopReadOptions.builder(conf, p).withRange(s.start(), s.start() + s.length()).build();
        rows = new ParquetFileReader(Files2.parquet(p, conf), opts);
      }
      MessageType fileSchema = rows.getFooter().getFileMetaData().getSchema();
      checkSchema(fileSchema, s.path());
      blocks = rows.getRowGroups();
      if (!rowSchema.getFields().isEmpty()) {
        rows.setRequestedSchema(rowSchema);
      }
      data = ByteSource.open(p, conf);
      if (tensor == null) {
        tensor = new TensorColumnReader(leaf, codecs, times);
      }
      block = -1;
      rowInFile = 0;
    } catch (IOException e) {
      closeFile();
      throw new UncheckedIOException("opening Parquet file " + s.path() + ": " + e.getMessage(), e);
    } catch (RuntimeException e) {
      closeFile();
      if (e instanceof BadRecordException || e instanceof CorruptInputException) {
        throw e;
      }
      throw new CorruptInputException(s.path() + ": not a readable Parquet file: " + e.getMessage());
    } finally {
      times.add(Phase.READ, System.nanoTime() - t0);
    }
  }

  /** Every column the layout uses must have the type the first file gave it. */
  private void checkSchema(MessageType fileSchema, String path) {
    List<String> diff = TensorLayout.schemaDifferences(fileSchema, layout.inputSchema(), "the first file");
    if (!diff.isEmpty()) {
      throw new BadRecordException(path, "its schema differs from the input's first file: " + String.join("; ", diff)
          + " (all input files must share one schema)");
    }
  }

  /** Opens the next row group of the current file; false when there is none. */
  private boolean nextBlock() {
    do {
      block++;
      if (block >= blocks.size()) {
        return false;
      }
      // an empty row group holds nothing, and parquet's reader steps over it by itself
    } while (blocks.get(block).getRowCount() == 0);
    long t0 = System.nanoTime();
    BlockMetaData b = blocks.get(block);
    rowsInBlock = b.getRowCount();
    rowInBlock = 0;
    rowInFile = rowIndexOf(b);
    try {
      if (!rowSchema.getFields().isEmpty()) {
        PageReadStore pages = rows.readNextRowGroup();
        if (pages == null || pages.getRowCount() != rowsInBlock) {
          throw new CorruptInputException(split.path() + ": row group " + block + " could not be read");
        }
        MessageColumnIO io = new ColumnIOFactory().getColumnIO(rowSchema, rows.getFooter().getFileMetaData().getSchema());
        records = io.getRecordReader(pages, new GroupRecordConverter(rowSchema));
      } else {
        records = null;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading row group " + block + " of " + split.path() + ": " + e.getMessage(), e);
    }
    ColumnChunkMetaData chunk = null;
    for (ColumnChunkMetaData c : b.getColumns()) {
      if (c.getPath().toDotString().equals(String.join(".", leaf.getPath()))) {
        chunk = c;
      }
    }
    if (chunk == null) {
      throw new CorruptInputException(split.path() + ": row group " + block + " has no column " + String.join(".", leaf.getPath()));
    }
    tensor.openChunk(data, chunk, split.path() + " row group " + block, PageGate.UNLIMITED);
    times.add(Phase.READ, System.nanoTime() - t0);
    return true;
  }

  private long rowIndexOf(BlockMetaData b) {
    long idx = b.getRowIndexOffset();
    return idx >= 0 ? idx : 0;
  }

  private void closeFile() {
    try {
      if (rows != null) {
        rows.close();
      }
      if (data != null) {
        data.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      rows = null;
      data = null;
      records = null;
    }
  }

  @Override
  public long volumes() {
    return volumes;
  }

  /** Snappy pages of the tensor column decoded straight into the sinks so far (tests check the path ran). */
  long snappyStreamed() {
    return tensor == null ? 0 : tensor.snappyStreamed();
  }

  /** Compressed pages of the tensor column decompressed whole so far. */
  long wholePages() {
    return tensor == null ? 0 : tensor.wholePages();
  }

  /** Direct buffers allocated for the tensor column's pages so far (tests check they are reused). */
  long scratchTakes() {
    return tensor == null ? 0 : tensor.scratchTakes();
  }

  @Override
  public void close() {
    try {
      if (tensor != null) {
        tensor.close();
      }
    } finally {
      closeFile();
      codecs.release();
    }
  }

  /** Reads values of the small columns from a row's group (here and in the driver's planning). */
  public static final class RowValues {
    private RowValues() {}

    /** The row's id as text, when the input has an {@code id} column and the row a value. */
    public static String id(Group g) {
      if (g == null || !g.getType().containsField(TensorLayout.ID)) {
        return null;
      }
      int f = g.getType().getFieldIndex(TensorLayout.ID);
      if (g.getFieldRepetitionCount(f) == 0) {
        return null;
      }
      Type t = g.getType().getType(f);
      if (t.isPrimitive() && t.asPrimitiveType().getPrimitiveTypeName() == PrimitiveTypeName.BINARY) {
        return g.getString(f, 0);
      }
      return t.isPrimitive() ? g.getValueToString(f, 0) : null;
    }

    /** An integer column's value, null when the row has none. */
    public static Long integer(Group g, String field) {
      int f = g.getType().getFieldIndex(field);
      return g.getFieldRepetitionCount(f) == 0 ? null : primitive(g, f, 0);
    }

    /** A numeric column's value (any int, float or double column), null when the row has none. */
    static Double number(Group g, String field, String record) {
      int f = g.getType().getFieldIndex(field);
      if (g.getFieldRepetitionCount(f) == 0) {
        return null;
      }
      Type t = g.getType().getType(f);
      PrimitiveTypeName p = t.isPrimitive() ? t.asPrimitiveType().getPrimitiveTypeName() : null;
      if (p == PrimitiveTypeName.DOUBLE) {
        return g.getDouble(f, 0);
      } else if (p == PrimitiveTypeName.FLOAT) {
        return (double) g.getFloat(f, 0);
      } else if (p == PrimitiveTypeName.INT32 || p == PrimitiveTypeName.INT64) {
        return (double) primitive(g, f, 0);
      }
      throw new BadRecordException(record, "column '" + field + "' must be a number (int, float or double), got " + t);
    }

    public static String string(Group g, String field) {
      int f = g.getType().getFieldIndex(field);
      return g.getFieldRepetitionCount(f) == 0 ? null : g.getString(f, 0);
    }

    /** The integers of a list column (3-level, 2-level or a bare repeated field), null elements as null; null for a null list. */
    public static List<Long> longList(Group g, String field) {
      int f = g.getType().getFieldIndex(field);
      Type t = g.getType().getType(f);
      List<Long> out = new ArrayList<>();
      if (t.isRepetition(Type.Repetition.REPEATED)) {
        for (int i = 0; i < g.getFieldRepetitionCount(f); i++) {
          out.add(primitive(g, f, i));
        }
        return out;
      }
      if (g.getFieldRepetitionCount(f) == 0) {
        return null;
      }
      Group list = g.getGroup(f, 0);
      Type rt = list.getType().getType(0);
      int n = list.getFieldRepetitionCount(0);
      for (int i = 0; i < n; i++) {
        if (rt.isPrimitive()) {
          out.add(primitive(list, 0, i));
        } else {
          Group e = list.getGroup(0, i);
          out.add(e.getFieldRepetitionCount(0) == 0 ? null : primitive(e, 0, 0));
        }
      }
      return out;
    }

    private static Long primitive(Group g, int f, int i) {
      PrimitiveTypeName p = g.getType().getType(f).asPrimitiveType().getPrimitiveTypeName();
      return p == PrimitiveTypeName.INT64 ? g.getLong(f, i) : (long) g.getInteger(f, i);
    }
  }
}
