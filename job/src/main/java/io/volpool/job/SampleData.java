package io.volpool.job;

import io.volpool.io.parquet.TensorLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Writes a deterministic sample dataset in the binary Parquet layout: {@code count} volumes of
 * the reference shape {@code [3,16,32,32]}, uniform in [0, 1), seeded by the volume index, so every
 * run of the demo sees the same data. Usage: {@code SampleData OUTPUT_DIR [COUNT] [FILES]}.
 */
public final class SampleData {
  public static final int[] SHAPE = {3, 16, 32, 32};

  private SampleData() {}

  public static StructType schema() {
    return new StructType()
        .add(TensorLayout.ID, DataTypes.StringType, false)
        .add(TensorLayout.SHAPE, DataTypes.createArrayType(DataTypes.IntegerType, false), false)
        .add(TensorLayout.DTYPE, DataTypes.StringType, false)
        .add(TensorLayout.DATA, DataTypes.BinaryType, false);
  }

  /** Volume {@code i} of the sample set: float32 little-endian bytes. */
  public static byte[] volume(int i, int[] shape) {
    int n = shape[0] * shape[1] * shape[2] * shape[3];
    ByteBuffer b = ByteBuffer.allocate(n * 4).order(ByteOrder.LITTLE_ENDIAN);
    SplittableRandom r = new SplittableRandom(0x5eed0000L + i);
    for (int k = 0; k < n; k++) {
      b.putFloat((float) r.nextDouble());
    }
    return b.array();
  }

  /** An {@code array<int>} value for Spark's row encoder (a Scala Seq). */
  public static scala.collection.Seq<Integer> seq(int... dims) {
    List<Integer> l = new ArrayList<>(dims.length);
    for (int d : dims) {
      l.add(d);
    }
    return scala.jdk.javaapi.CollectionConverters.asScala(l).toSeq();
  }

  public static void write(SparkSession spark, String out, int count, int files) {
    write(spark, out, count, files, 0);
  }

  /** {@code count} sample volumes in {@code files} files, ids and values from volume number {@code first} on. */
  public static void write(SparkSession spark, String out, int count, int files, int first) {
    List<Integer> idx = new ArrayList<>();
    for (int i = first; i < first + count; i++) {
      idx.add(i);
    }
    scala.collection.Seq<Integer> shape = seq(SHAPE);
    spark.createDataset(idx, org.apache.spark.sql.Encoders.INT()).repartition(files)
        .map((org.apache.spark.api.java.function.MapFunction<Integer, Row>) i ->
            RowFactory.create(String.format("vol-%06d", i), shape, "float32", volume(i, SHAPE)),
            org.apache.spark.sql.Encoders.row(schema()))
        .sortWithinPartitions("id")
        .write().mode(SaveMode.ErrorIfExists).parquet(out);
  }

  public static void main(String[] args) {
    if (args.length < 1) {
      System.err.println("usage: SampleData OUTPUT_DIR [COUNT=256] [FILES=4]");
      System.exit(2);
    }
    int count = args.length > 1 ? Integer.parseInt(args[1]) : 256;
    int files = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    SparkSession spark = SparkSession.builder().master("local[*]").appName("volpool-sample-data").getOrCreate();
    try {
      write(spark, args[0], count, files);
      System.out.println("volpool: wrote " + count + " sample volumes [3, 16, 32, 32] to " + args[0]);
    } finally {
      spark.stop();
    }
  }
}
