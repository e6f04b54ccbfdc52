package io.volpool.spark;

import io.volpool.op.VolumeShape;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Where a Parquet row keeps its tensor, and the output schema. Two input layouts: the binary
 * layout ({@code shape} array&lt;int&gt;, {@code dtype} string, {@code data} binary, little-endian C order)
 * and a fixed-shape tensor column ({@code array<float>}, pyarrow's {@code arrow.fixed_shape_tensor},
 * shape given once for the column). Output is always the binary layout after the other input
 * columns, which pass through unchanged. Serializable; built on the driver from the input schema.
 */
public final class TensorLayout implements Serializable {
  private static final long serialVersionUID = 1L;
  public static final String ID = "id";
  public static final String SHAPE = "shape";
  public static final String DTYPE = "dtype";
  public static final String DATA = "data";

  private final StructType inputSchema;
  private final String tensorColumn;
  private final VolumeShape fixedShape;
  private final int[] passthrough;
  private final int idIndex;
  private final int shapeIndex;
  private final int dtypeIndex;
  private final int dataIndex;
  private final int tensorIndex;

  private TensorLayout(StructType schema, String tensorColumn, VolumeShape fixedShape) {
    this.inputSchema = schema;
    this.tensorColumn = tensorColumn;
    this.fixedShape = fixedShape;
    this.idIndex = indexOf(schema, ID);
    List<Integer> pass = new ArrayList<>();
    if (tensorColumn == null) {
      shapeIndex = indexOf(schema, SHAPE);
      dtypeIndex = indexOf(schema, DTYPE);
      dataIndex = indexOf(schema, DATA);
      tensorIndex = -1;
      for (int i = 0; i < schema.size(); i++) {
        if (i != shapeIndex && i != dtypeIndex && i != dataIndex) {
          pass.add(i);
        }
      }
    } else {
      shapeIndex = -1;
      dtypeIndex = -1;
      dataIndex = -1;
      tensorIndex = indexOf(schema, tensorColumn);
      for (int i = 0; i < schema.size(); i++) {
        String n = schema.fields()[i].name();
        if (i != tensorIndex && !n.equals(SHAPE) && !n.equals(DTYPE) && !n.equals(DATA)) {
          pass.add(i);
        }
      }
    }
    this.passthrough = pass.stream().mapToInt(Integer::intValue).toArray();
  }

  private static int indexOf(StructType schema, String name) {
    for (int i = 0; i < schema.size(); i++) {
      if (schema.fields()[i].name().equals(name)) {
        return i;
      }
    }
    return -1;
  }

  /**
   * Chooses the layout for {@code schema}: the binary layout when it has a binary {@code data}
   * column and no tensor column is named; else the named (or the only) {@code array<float>} column.
   *
   * @param tensorColumn the user's choice of tensor column, or null to detect
   * @param fixedShape the shape of every tensor of a fixed-shape column (null for the binary layout)
   * @throws IllegalArgumentException naming what the schema lacks
   */
  public static TensorLayout detect(StructType schema, String tensorColumn, VolumeShape fixedShape) {
    if (tensorColumn == null) {
      int data = indexOf(schema, DATA);
      if (data >= 0) {
        requireType(schema, DATA, DataTypes.BinaryType, "binary");
        int shape = indexOf(schema, SHAPE);
        if (shape < 0 || !(schema.fields()[shape].dataType() instanceof ArrayType at)
            || !(at.elementType() instanceof IntegerType || at.elementType() instanceof LongType)) {
          throw new IllegalArgumentException("input has a binary 'data' column but no 'shape' column of type array<int>"
              + " (schema: " + schema.simpleString() + ")");
        }
        if (indexOf(schema, DTYPE) < 0) {
          throw new IllegalArgumentException("input has a binary 'data' column but no 'dtype' string column (schema: "
              + schema.simpleString() + ")");
        }
        return new TensorLayout(schema, null, null);
      }
      List<String> candidates = new ArrayList<>();
      for (StructField f : schema.fields()) {
        if (f.dataType() instanceof ArrayType at && at.elementType() instanceof FloatType) {
          candidates.add(f.name());
        }
      }
      if (candidates.size() != 1) {
        throw new IllegalArgumentException("cannot find the tensors in the input: expected a binary 'data' column"
            + " (with 'shape' and 'dtype') or exactly one array<float> column, found " + candidates.size()
            + " array<float> columns " + candidates + " in schema " + schema.simpleString()
            + "; name one with spark.volpool.input.tensorColumn");
      }
      tensorColumn = candidates.get(0);
    }
    int t = indexOf(schema, tensorColumn);
    if (t < 0) {
      throw new IllegalArgumentException("spark.volpool.input.tensorColumn='" + tensorColumn + "' is not a column of the input ("
          + schema.simpleString() + ")");
    }
    if (!(schema.fields()[t].dataType() instanceof ArrayType at) || !(at.elementType() instanceof FloatType)) {
      throw new IllegalArgumentException("tensor column '" + tensorColumn + "' must be array<float>, got "
          + schema.fields()[t].dataType().simpleString());
    }
    if (fixedShape == null) {
      throw new IllegalArgumentException("tensor column '" + tensorColumn + "' holds flat float arrays and the input has no"
          + " arrow.fixed_shape_tensor metadata giving their shape; set spark.volpool.input.tensorShape=C,D,H,W");
    }
    return new TensorLayout(schema, tensorColumn, fixedShape);
  }

  private static void requireType(StructType schema, String name, org.apache.spark.sql.types.DataType type, String word) {
    org.apache.spark.sql.types.DataType got = schema.fields()[indexOf(schema, name)].dataType();
    if (!got.equals(type)) {
      throw new IllegalArgumentException("column '" + name + "' must be " + word + ", got " + got.simpleString());
    }
  }

  public boolean isBinary() {
    return tensorColumn == null;
  }

  public String tensorColumn() {
    return tensorColumn;
  }

  public VolumeShape fixedShape() {
    return fixedShape;
  }

  public StructType inputSchema() {
    return inputSchema;
  }

  int idIndex() {
    return idIndex;
  }

  int shapeIndex() {
    return shapeIndex;
  }

  int dtypeIndex() {
    return dtypeIndex;
  }

  int dataIndex() {
    return dataIndex;
  }

  int tensorIndex() {
    return tensorIndex;
  }

  int[] passthrough() {
    return passthrough;
  }

  /** Passthrough columns in input order, then {@code shape}, {@code dtype}, {@code data}. */
  public StructType outputSchema() {
    StructType out = new StructType();
    for (int i : passthrough) {
      out = out.add(inputSchema.fields()[i]);
    }
    return out.add(SHAPE, DataTypes.createArrayType(DataTypes.IntegerType, false), false)
        .add(DTYPE, DataTypes.StringType, false)
        .add(DATA, DataTypes.BinaryType, false);
  }
}
