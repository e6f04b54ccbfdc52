package io.volpool.job.io;

import io.volpool.spark.NpyFileFunction;
import io.volpool.spark.NpyVolumes;
import io.volpool.spark.Shapes;
import io.volpool.spark.TensorLayout;
import java.util.ArrayList;
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
    NpyVolumes v = NpyVolumes.read(path, (byte[]) file.get(file.fieldIndex("content")));
    String rel = NpyFileFunction.relativePath(inputRoot, path);
    scala.collection.Seq<Integer> shape = Shapes.seq(v.shape());
    List<Row> rows = new ArrayList<>(v.count());
    for (int i = 0; i < v.count(); i++) {
      byte[] b = new byte[(int) v.shape().bytes()];
      v.volume(i).get(b);
      rows.add(RowFactory.create(v.leading().length == 0 ? rel : rel + "[" + i + "]", shape, "float32", b));
    }
    return rows.iterator();
  }
}
