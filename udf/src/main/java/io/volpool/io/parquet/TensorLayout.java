package io.volpool.io.parquet;

import io.volpool.conf.VolpoolOptions;
import io.volpool.op.VolumeShape;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;
import org.apache.parquet.schema.Types;

/**
 * Where a Parquet input keeps its tensors, decided once on the driver from a file's schema, and the
 * output schema. Two input layouts: the binary layout ({@code shape} list of int, {@code dtype}
 * string, {@code data} binary, little-endian C order) and a fixed-shape tensor column (a list of
 * float, pyarrow's {@code arrow.fixed_shape_tensor}, shape given once for the column). The output
 * is always the binary layout after the other input columns, which pass through with their Parquet
 * types unchanged. Serializable (the schemas travel as text).
 */
public final class TensorLayout implements Serializable {
  private static final long serialVersionUID = 2L;
  public static final String ID = "id";
  public static final String SHAPE = "shape";
  public static final String DTYPE = "dtype";
  public static final String DATA = "data";
  /** First plane along D a row of a volume stored across rows holds. */
  public static final String D0 = "d0";
  /** One past the last plane along D the row holds. */
  public static final String D1 = "d1";

  private final String inputSchema;
  private final String tensorColumn;
  private final VolumeShape fixedShape;
  private final List<String> passthrough;
  private final boolean planeRows;
  private transient MessageType input;

  private TensorLayout(MessageType schema, String tensorColumn, VolumeShape fixedShape) {
    this.inputSchema = schema.toString();
    this.input = schema;
    this.tensorColumn = tensorColumn;
    this.fixedShape = fixedShape;
    this.planeRows = tensorColumn == null && isInt(schema, D0) && isInt(schema, D1);
    List<String> pass = new ArrayList<>();
    for (Type f : schema.getFields()) {
      String n = f.getName();
      boolean tensor = tensorColumn == null ? n.equals(SHAPE) || n.equals(DTYPE) || n.equals(DATA)
          || (planeRows && (n.equals(D0) || n.equals(D1)))
          : n.equals(tensorColumn) || n.equals(SHAPE) || n.equals(DTYPE) || n.equals(DATA);
      if (!tensor) {
        pass.add(n);
      }
    }
    this.passthrough = List.copyOf(pass);
  }

  /**
   * Chooses the layout for {@code schema}: the binary layout when it has a binary {@code data}
   * column and no tensor column is named; else the named (or the only) list-of-float column.
   *
   * @param tensorColumn the user's choice of tensor column, or null to detect
   * @param fixedShape the shape of every tensor of a list column (null for the binary layout)
   * @throws IllegalArgumentException naming what the schema lacks
   */
  public static TensorLayout detect(MessageType schema, String tensorColumn, VolumeShape fixedShape) {
    if (tensorColumn == null) {
      if (schema.containsField(DATA)) {
        Type d = schema.getType(DATA);
        if (!d.isPrimitive() || d.asPrimitiveType().getPrimitiveTypeName() != PrimitiveTypeName.BINARY
            || d.isRepetition(Type.Repetition.REPEATED)) {
          throw new IllegalArgumentException("column 'data' must be binary, got " + d);
        }
        ColumnDescriptor shape = listLeaf(schema, SHAPE);
        if (shape == null || (shape.getPrimitiveType().getPrimitiveTypeName() != PrimitiveTypeName.INT32
            && shape.getPrimitiveType().getPrimitiveTypeName() != PrimitiveTypeName.INT64)) {
          throw new IllegalArgumentException("input has a binary 'data' column but no 'shape' column of type list<int>"
              + " (schema: " + oneLine(schema) + ")");
        }
        if (!schema.containsField(DTYPE) || !schema.getType(DTYPE).isPrimitive()
            || schema.getType(DTYPE).asPrimitiveType().getPrimitiveTypeName() != PrimitiveTypeName.BINARY) {
          throw new IllegalArgumentException("input has a binary 'data' column but no 'dtype' string column (schema: "
              + oneLine(schema) + ")");
        }
        return new TensorLayout(schema, null, null);
      }
      List<String> candidates = new ArrayList<>();
      for (Type f : schema.getFields()) {
        ColumnDescriptor leaf = listLeaf(schema, f.getName());
        if (leaf != null && valueTypes(leaf.getPrimitiveType()) != null) {
          candidates.add(f.getName());
        }
      }
      if (candidates.size() != 1) {
        throw new IllegalArgumentException("cannot find the tensors in the input: expected a binary 'data' column"
            + " (with 'shape' and 'dtype') or exactly one list column of numbers (" + LIST_VALUES + "), found "
            + candidates.size() + " such columns " + candidates + " in schema " + oneLine(schema)
            + "; name one with " + VolpoolOptions.INPUT_TENSOR_COLUMN.key());
      }
      tensorColumn = candidates.get(0);
    }
    if (!schema.containsField(tensorColumn)) {
      throw new IllegalArgumentException(VolpoolOptions.INPUT_TENSOR_COLUMN.key() + "='" + tensorColumn + "' is not a column of the input ("
          + oneLine(schema) + ")");
    }
    ColumnDescriptor leaf = listLeaf(schema, tensorColumn);
    if (leaf == null || valueTypes(leaf.getPrimitiveType()) == null) {
      throw new IllegalArgumentException("tensor column '" + tensorColumn + "' must be a list of " + LIST_VALUES + ", got "
          + schema.getType(tensorColumn));
    }
    if (fixedShape == null) {
      throw new IllegalArgumentException("tensor column '" + tensorColumn + "' holds flat lists and the input has no"
          + " arrow.fixed_shape_tensor metadata giving their shape; set " + VolpoolOptions.INPUT_TENSOR_SHAPE.key() + "=C,D,H,W");
    }
    return new TensorLayout(schema, tensorColumn, fixedShape);
  }

  /** The element types a tensor list column may hold, as Arrow names them (pyarrow's fixed_shape_tensor value types). */
  static final String LIST_VALUES = "float, double, halffloat, int8, uint8, int16, uint16 or int32";

  /**
   * The value types of a list column's elements: {@code [0]} as Parquet stores them (what the reader
   * widens: int8 to int32 are all 4-byte INT32 there, float16 a 2-byte FIXED_LEN_BYTE_ARRAY), {@code [1]}
   * the dtype the user stored (for provenance); null when the element is no number volpool takes.
   */
  static io.volpool.format.ValueType[] valueTypes(PrimitiveType t) {
    io.volpool.format.Dtype physical;
    io.volpool.format.Dtype logical;
    LogicalTypeAnnotation a = t.getLogicalTypeAnnotation();
    switch (t.getPrimitiveTypeName()) {
      case FLOAT:
        physical = io.volpool.format.Dtype.FLOAT32;
        logical = physical;
        break;
      case DOUBLE:
        physical = io.volpool.format.Dtype.FLOAT64;
        logical = physical;
        break;
      case INT32:
        physical = io.volpool.format.Dtype.INT32;
        if (a == null) {
          logical = physical;
        } else if (a instanceof LogicalTypeAnnotation.IntLogicalTypeAnnotation i) {
          logical = switch (i.getBitWidth()) {
            case 8 -> i.isSigned() ? io.volpool.format.Dtype.INT8 : io.volpool.format.Dtype.UINT8;
            case 16 -> i.isSigned() ? io.volpool.format.Dtype.INT16 : io.volpool.format.Dtype.UINT16;
            case 32 -> i.isSigned() ? io.volpool.format.Dtype.INT32 : null;
            default -> null;
          };
        } else {
          logical = null;
        }
        break;
      case FIXED_LEN_BYTE_ARRAY:
        boolean half = t.getTypeLength() == 2 && a instanceof LogicalTypeAnnotation.Float16LogicalTypeAnnotation;
        physical = half ? io.volpool.format.Dtype.FLOAT16 : null;
        logical = physical;
        break;
      default:
        return null;
    }
    if (physical == null || logical == null) {
      return null;
    }
    return new io.volpool.format.ValueType[] {new io.volpool.format.ValueType(physical, false),
        new io.volpool.format.ValueType(logical, false)};
  }

  /** How the tensor list column's values are stored in Parquet (null for the binary layout, whose rows say). */
  public io.volpool.format.ValueType listStored() {
    return isBinary() ? null : valueTypes(tensorLeaf().getPrimitiveType())[0];
  }

  /** The dtype of the tensor list column's values as the user wrote them (int16 for Arrow int16, stored as INT32). */
  public io.volpool.format.ValueType listDtype() {
    return isBinary() ? null : valueTypes(tensorLeaf().getPrimitiveType())[1];
  }

  private static boolean isInt(MessageType schema, String name) {
    if (!schema.containsField(name) || !schema.getType(name).isPrimitive()
        || schema.getType(name).isRepetition(Type.Repetition.REPEATED)) {
      return false;
    }
    PrimitiveTypeName t = schema.getType(name).asPrimitiveType().getPrimitiveTypeName();
    return t == PrimitiveTypeName.INT32 || t == PrimitiveTypeName.INT64;
  }

  /** The one leaf column under top-level field {@code name} when it is a list (repeated once), else null. */
  static ColumnDescriptor listLeaf(MessageType schema, String name) {
    if (!schema.containsField(name)) {
      return null;
    }
    ColumnDescriptor found = null;
    for (ColumnDescriptor c : schema.getColumns()) {
      if (c.getPath()[0].equals(name)) {
        if (found != null) {
          return null;
        }
        found = c;
      }
    }
    return found != null && found.getMaxRepetitionLevel() == 1 ? found : null;
  }

  private static String oneLine(MessageType schema) {
    return schema.toString().replaceAll("\\s+", " ").trim();
  }

  public boolean isBinary() {
    return tensorColumn == null;
  }

  /**
   * True for volumes stored across rows: the binary layout plus integer {@code d0} and {@code d1}
   * columns. Each row holds planes {@code [d0, d1)} along D of every channel of the volume its
   * {@code id} names, as {@code [C, d1 - d0, H, W]}; {@code shape} is the whole volume's.
   */
  public boolean planeRows() {
    return planeRows;
  }

  public String tensorColumn() {
    return tensorColumn;
  }

  public VolumeShape fixedShape() {
    return fixedShape;
  }

  public MessageType inputSchema() {
    if (input == null) {
      input = MessageTypeParser.parseMessageType(inputSchema);
    }
    return input;
  }

  /** The leaf column holding the tensor values: {@code data}, or the float leaf of the tensor column. */
  public ColumnDescriptor tensorLeaf() {
    return isBinary() ? inputSchema().getColumnDescription(new String[] {DATA}) : listLeaf(inputSchema(), tensorColumn);
  }

  /**
   * How schema {@code have} (a file's) differs from {@code want} column by column, naming {@code wantWhat} (e.g.
   * "the first file"): missing, extra and retyped top-level columns; empty when they agree.
   */
  public static List<String> schemaDifferences(MessageType have, MessageType want, String wantWhat) {
    List<String> diff = new ArrayList<>();
    for (Type f : want.getFields()) {
      if (!have.containsField(f.getName())) {
        diff.add("no column '" + f.getName() + "'");
      } else if (!have.getType(f.getName()).equals(f)) {
        diff.add("column '" + f.getName() + "' is " + oneLine(have.getType(f.getName())) + " where " + wantWhat + " has "
            + oneLine(f));
      }
    }
    for (Type f : have.getFields()) {
      if (!want.containsField(f.getName())) {
        diff.add("an extra column '" + f.getName() + "'");
      }
    }
    return diff;
  }

  private static String oneLine(Type t) {
    return t.toString().replaceAll("\\s+", " ").trim();
  }

  /** True when the input has an {@code id} column; without one the output's ids are {@code path[row]}. */
  public boolean hasId() {
    return inputSchema().containsField(ID);
  }

  /** Top-level input columns copied to the output, in input order. */
  public List<String> passthrough() {
    return passthrough;
  }

  /** Every top-level input column except the tensor values (what the row reader reads). */
  public MessageType rowSchema() {
    String skip = isBinary() ? DATA : tensorColumn;
    List<Type> keep = new ArrayList<>();
    for (Type f : inputSchema().getFields()) {
      if (!f.getName().equals(skip)) {
        keep.add(f);
      }
    }
    return new MessageType("volpool_rows", keep);
  }

  /**
   * {@code id} when the input has none, pass-through columns in input order, then {@code shape}, {@code dtype}, ({@code d0}, {@code d1}
   * when {@code planeRows}), {@code data}.
   */
  public MessageType outputSchema(boolean planeRows) {
    List<Type> out = new ArrayList<>();
    if (!hasId()) {
      // every output row says which volume it holds: path[row] where the input names none
      out.add(Types.required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named(ID));
    }
    for (String p : passthrough) {
      out.add(inputSchema().getType(p));
    }
    return outputSchema(out, planeRows);
  }

  /** The output schema after {@code leading} columns: the binary layout Spark writes for non-null values. */
  public static MessageType outputSchema(List<Type> leading, boolean planeRows) {
    List<Type> out = new ArrayList<>(leading);
    out.add(Types.requiredList().requiredElement(PrimitiveTypeName.INT32).named(SHAPE));
    out.add(Types.required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named(DTYPE));
    if (planeRows) {
      out.add(Types.required(PrimitiveTypeName.INT32).named(D0));
      out.add(Types.required(PrimitiveTypeName.INT32).named(D1));
    }
    out.add(Types.required(PrimitiveTypeName.BINARY).named(DATA));
    return new MessageType("spark_schema", out);
  }

  /** The output schema of .npy input written as Parquet: {@code id} (the file's relative path) and the binary layout. */
  public static MessageType npyOutputSchema(boolean planeRows) {
    PrimitiveType id = Types.required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named(ID);
    return outputSchema(List.of(id), planeRows);
  }
}
