package io.volpool.spark;

import io.volpool.conf.VolpoolOptions;
import io.volpool.backend.VolumeSink;
import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
import io.volpool.io.BadRecordException;
import io.volpool.io.PageGate;
import io.volpool.io.RowRules;
import io.volpool.io.VolumeInput;
import io.volpool.io.VolumeSource;
import io.volpool.backend.WideningSink;
import io.volpool.op.VolumeShape;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Volumes of a DataFrame's rows, for {@code Volpool.transform}: the binary layout ({@code shape}
 * array&lt;int&gt;, {@code dtype}, {@code data} binary) or an array&lt;float&gt; column of a fixed
 * shape. Each row is checked by the same rules as the job's Parquet rows. The rows come from
 * Spark, so their tensors are already on the heap; this reads them, it cannot stream them.
 */
public final class RowInput implements VolumeInput {
  /** Where the tensors are in a row; built on the driver from the DataFrame's schema. */
  public record Layout(StructType schema, int id, int shape, int dtype, int data, int tensor, VolumeShape fixed,
      int[] passthrough) implements Serializable {

    /** The layout of {@code schema}: the named (or only) array&lt;float&gt; column, else the binary layout. */
    public static Layout of(StructType schema, String tensorColumn, VolumeShape fixed) {
      int id = index(schema, "id");
      if (tensorColumn == null && index(schema, "data") >= 0) {
        int data = index(schema, "data");
        int shape = index(schema, "shape");
        int dtype = index(schema, "dtype");
        if (!(schema.fields()[data].dataType() instanceof BinaryType) || shape < 0
            || !(schema.fields()[shape].dataType() instanceof ArrayType at)
            || !(at.elementType() instanceof IntegerType || at.elementType() instanceof LongType) || dtype < 0) {
          throw new IllegalArgumentException("a binary 'data' column needs 'shape' array<int> and 'dtype' string columns"
              + " beside it; got " + schema.simpleString());
        }
        return new Layout(schema, id, shape, dtype, data, -1, null, pass(schema, shape, dtype, data, -1));
      }
      int t = -1;
      for (int i = 0; i < schema.size(); i++) {
        StructField f = schema.fields()[i];
        boolean numbers = f.dataType() instanceof ArrayType at && elementDtype(at.elementType()) != null;
        if (tensorColumn != null ? f.name().equals(tensorColumn) : numbers) {
          if (!numbers) {
            throw new IllegalArgumentException("tensor column '" + tensorColumn + "' must be an array of " + ELEMENTS
                + ", got " + f.dataType().simpleString());
          }
          if (t >= 0) {
            throw new IllegalArgumentException("several array columns of numbers; name one with "
                + VolpoolOptions.INPUT_TENSOR_COLUMN.key());
          }
          t = i;
        }
      }
      if (t < 0) {
        throw new IllegalArgumentException("no tensors: expected a binary 'data' column (with 'shape' and 'dtype') or an"
            + " array column of " + ELEMENTS + ", got " + schema.simpleString());
      }
      if (fixed == null) {
        throw new IllegalArgumentException("array column '" + schema.fields()[t].name() + "' needs its shape:"
            + " set " + VolpoolOptions.INPUT_TENSOR_SHAPE.key() + "=C,D,H,W");
      }
      return new Layout(schema, id, -1, -1, -1, t, fixed, pass(schema, -1, -1, -1, t));
    }

    /** The array element types a tensor column may hold (Spark's types for pyarrow's fixed_shape_tensor values). */
    static final String ELEMENTS = "float, double, tinyint, smallint or int";

    /** The dtype an array column's elements were stored as, or null for elements that are no tensor values. */
    static ValueType elementDtype(org.apache.spark.sql.types.DataType t) {
      if (t instanceof FloatType) {
        return ValueType.FLOAT32;
      } else if (t instanceof org.apache.spark.sql.types.DoubleType) {
        return ValueType.parse("float64");
      } else if (t instanceof org.apache.spark.sql.types.ByteType) {
        return ValueType.parse("int8");
      } else if (t instanceof org.apache.spark.sql.types.ShortType) {
        return ValueType.parse("int16");
      } else if (t instanceof IntegerType) {
        return ValueType.parse("int32");
      }
      return null;
    }

    private static int[] pass(StructType s, int... skip) {
      return java.util.stream.IntStream.range(0, s.size())
          .filter(i -> java.util.Arrays.stream(skip).noneMatch(k -> k == i)).toArray();
    }

    static int index(StructType s, String name) {
      for (int i = 0; i < s.size(); i++) {
        if (s.fields()[i].name().equals(name)) {
          return i;
        }
      }
      return -1;
    }

    /** Pass-through columns, then {@code shape}, {@code dtype}, {@code data}. */
    public StructType outputSchema() {
      StructType out = new StructType();
      for (int i : passthrough) {
        out = out.add(schema.fields()[i]);
      }
      return out.add("shape", DataTypes.createArrayType(DataTypes.IntegerType, false), false)
          .add("dtype", DataTypes.StringType, false).add("data", DataTypes.BinaryType, false);
    }
  }

  private final Iterator<Row> rows;
  private final Layout layout;
  private long n;

  private final io.volpool.io.InputRescale rescale;

  public RowInput(Iterator<Row> rows, Layout layout) {
    this(rows, layout, io.volpool.io.InputRescale.NONE);
  }

  /** Rows whose values are rescaled as {@code rescale} says for each. */
  public RowInput(Iterator<Row> rows, Layout layout, io.volpool.io.InputRescale rescale) {
    this.rescale = rescale;
    this.rows = rows;
    this.layout = layout;
  }

  /** One row as a volume. */
  public final class RowVolume implements VolumeSource {
    private final Row row;
    private final String record;
    private ValueType type = ValueType.FLOAT32;
    private Rescale scale = Rescale.IDENTITY;
    private VolumeShape shape;

    RowVolume(Row row, long index) {
      this.row = row;
      this.record = layout.id() >= 0 && !row.isNullAt(layout.id()) ? "id=" + row.get(layout.id()) : "row " + index;
    }

    public Row row() {
      return row;
    }

    private Double number(String column) {
      int i;
      try {
        i = row.fieldIndex(column);
      } catch (IllegalArgumentException e) {
        throw new BadRecordException(record, "rescale column '" + column + "' is not a column of the input");
      }
      if (row.isNullAt(i)) {
        return null;
      }
      if (!(row.get(i) instanceof Number n)) {
        throw new BadRecordException(record, "rescale column '" + column + "' must be a number, got " + row.get(i));
      }
      return n.doubleValue();
    }

    @Override
    public String record() {
      return record;
    }

    @Override
    public VolumeShape shape() {
      if (shape == null) {
        shape = layout.tensor() >= 0 ? fixedShape() : binaryShape();
        scale = rescale.of(record, this::number);
      }
      return shape;
    }

    private VolumeShape fixedShape() {
      if (row.isNullAt(layout.tensor())) {
        throw new BadRecordException(record, "tensor column is null");
      }
      int len = row.getList(layout.tensor()).size();
      if (len != layout.fixed().numel()) {
        throw new BadRecordException(record, "tensor column holds " + len + " values but its fixed shape "
            + layout.fixed() + " needs " + layout.fixed().numel());
      }
      return layout.fixed();
    }

    private VolumeShape binaryShape() {
      VolumeShape s = RowRules.shape(record, row.isNullAt(layout.shape()) ? null : row.getList(layout.shape()));
      type = RowRules.dtype(record, row.isNullAt(layout.dtype()) ? null : row.getString(layout.dtype()));
      if (row.isNullAt(layout.data())) {
        throw new BadRecordException(record, "data is null");
      }
      RowRules.length(record, s, type, ((byte[]) row.get(layout.data())).length);
      return s;
    }

    @Override
    public long storedBytes() {
      shape();
      return layout.tensor() < 0 ? ((byte[]) row.get(layout.data())).length : shape.bytes();
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
    public ValueType storedDtype() {
      shape();
      return layout.tensor() < 0 ? type
          : Layout.elementDtype(((ArrayType) layout.schema().fields()[layout.tensor()].dataType()).elementType());
    }

    @Override
    public void copyStoredTo(VolumeSink dst) {
      shape();
      if (layout.tensor() >= 0) {
        VolumeSource.super.copyStoredTo(dst);
        return;
      }
      dst.put(ByteBuffer.wrap((byte[]) row.get(layout.data())));
    }

    @Override
    public void copyTo(VolumeSink dst) {
      shape();
      if (layout.tensor() < 0) {
        WideningSink.of(dst, type, scale).put(ByteBuffer.wrap((byte[]) row.get(layout.data())));
        return;
      }
      List<Object> vals = row.getList(layout.tensor());
      ByteBuffer b = ByteBuffer.allocate(vals.size() * 4).order(ByteOrder.LITTLE_ENDIAN);
      int i = 0;
      for (Object v : vals) {
        if (v == null) {
          throw new BadRecordException(record, "tensor column has a null at element " + i);
        }
        // each number as float32 exactly as .to(torch.float32) gives it (int to float rounds to nearest even)
        b.putFloat(((Number) v).floatValue());
        i++;
      }
      b.flip();
      WideningSink.of(dst, ValueType.FLOAT32, scale).put(b);
    }
  }

  @Override
  public VolumeSource next(PageGate gate) {
    if (!rows.hasNext()) {
      return null;
    }
    Row r = rows.next();
    handedOut.add(r);
    return new RowVolume(r, n++);
  }

  /** Rows handed out as volumes and not yet taken back, in order. */
  private final java.util.ArrayDeque<Row> handedOut = new java.util.ArrayDeque<>();

  /**
   * The input row of the next output volume: the engine hands volumes back in input order, one
   * output per input row, so the caller takes the rows back in that order for their other columns.
   */
  Row takeInputRow() {
    Row r = handedOut.poll();
    if (r == null) {
      throw new IllegalStateException("more output volumes than input rows");
    }
    return r;
  }

  @Override
  public long volumes() {
    return n;
  }

  @Override
  public void close() {
    // rows belong to Spark
  }
}
