package io.volpool.job.io;

import io.volpool.format.Npy;
import io.volpool.format.NpyArray;
import io.volpool.format.TensorFormatException;
import io.volpool.spark.BadRecordException;
import io.volpool.spark.NpyFileFunction;
import io.volpool.spark.Shapes;
import io.volpool.spark.TensorLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Turns each .npy file of Spark's {@code binaryFile} source into binary-layout rows, one per
 * volume, with id = the path relative to the input root ({@code path[i]} for batch files): used
 * when .npy input is written as Parquet.
 */
public final class NpyToRows implements FlatMapFunction<Row, Row> {
  private static final long serialVersionUID = 1L;
  public static final StructType SCHEMA = new StructType()
      .add(TensorLayout.ID, DataTypes.StringType, false)
      .add(TensorLayout.SHAPE, DataTypes.createArrayType(DataTypes.IntegerType, false), false)
      .add(TensorLayout.DTYPE, DataTypes.StringType, false)
      .add(TensorLayout.DATA, DataTypes.BinaryType, false);

  private final String inputRoot;

  public NpyToRows(String inputRoot) {
    this.inputRoot = inputRoot;
  }

  @Override
  public Iterator<Row> call(Row file) {
    String path = file.getString(file.fieldIndex("path"));
    NpyArray a;
    try {
      a = Npy.read((byte[]) file.get(file.fieldIndex("content")), path);
    } catch (TensorFormatException e) {
      throw new BadRecordException(path, e.getMessage(), e);
    }
    long[] s = a.shape();
    if (s.length != 4 && s.length != 5) {
      throw new BadRecordException(path, "an .npy input must hold one volume [C, D, H, W] or a batch [N, C, D, H, W],"
          + " got shape " + Arrays.toString(s));
    }
    int n = s.length == 5 ? Math.toIntExact(s[0]) : 1;
    int o = s.length - 4;
    scala.collection.Seq<Integer> shape = Shapes.seq((int) s[o], (int) s[o + 1], (int) s[o + 2], (int) s[o + 3]);
    long vb = 4L * s[o] * s[o + 1] * s[o + 2] * s[o + 3];
    String rel = NpyFileFunction.relativePath(inputRoot, path);
    ByteBuffer data = a.data();
    List<Row> rows = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      byte[] b = new byte[Math.toIntExact(vb)];
      data.slice((int) (i * vb), (int) vb).get(b);
      rows.add(RowFactory.create(s.length == 5 ? rel + "[" + i + "]" : rel, shape, "float32", b));
    }
    return rows.iterator();
  }
}
