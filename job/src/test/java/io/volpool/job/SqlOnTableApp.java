package io.volpool.job;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;

/**
 * A user's Spark application (submitted with the -spark.jar in --jars): every SQL function, callUDF
 * and transform on a Parquet-backed table. Prints one line per call with the rows it returned.
 * Args: PARQUET_INPUT MODEL.
 */
public final class SqlOnTableApp {
  private SqlOnTableApp() {}

  public static void main(String[] args) {
    SparkSession spark = SparkSession.builder().appName("volpool-sql-on-table").getOrCreate();
    try {
      Volpool.register(spark);
      Dataset<Row> vols = spark.read().parquet(args[0]);
      vols.createOrReplaceTempView("vols");
      Map<String, String> queries = new java.util.LinkedHashMap<>();
      queries.put("volpool_avgpool3d", "SELECT id, volpool_avgpool3d(data, shape, dtype, 3, 2, 1).data AS d FROM vols");
      queries.put("volpool_avgpool3d_full",
          "SELECT id, volpool_avgpool3d_full(data, shape, dtype, 3, 2, 1, false, true).data AS d FROM vols");
      queries.put("volpool_maxpool3d", "SELECT id, volpool_maxpool3d(data, shape, dtype, 3, 2, 1).data AS d FROM vols");
      queries.put("volpool_maxpool3d_full",
          "SELECT id, volpool_maxpool3d_full(data, shape, dtype, 3, 2, 1, 1, false).data AS d FROM vols");
      queries.put("volpool_fused", "SELECT id, volpool_fused(data, shape, dtype, '" + args[1] + "').data AS d FROM vols");
      for (var q : queries.entrySet()) {
        List<Row> rows = spark.sql(q.getValue()).collectAsList();
        System.out.println("SQL-APP " + q.getKey() + " rows=" + rows.size() + " bytes=" + ((byte[]) rows.get(0).get(1)).length);
      }
      long n = vols.withColumn("r", functions.callUDF("volpool_maxpool3d", functions.col("data"), functions.col("shape"),
          functions.col("dtype"), functions.lit(3), functions.lit(2), functions.lit(1))).select("r.data").collectAsList().size();
      System.out.println("SQL-APP callUDF rows=" + n);
      long t = Volpool.transform(vols, Map.of("pipeline", "avgpool3d", "avgpool3d.kernelSize", "3", "avgpool3d.stride",
          "2", "avgpool3d.padding", "1", "device", "cpu")).count();
      System.out.println("SQL-APP transform rows=" + t);
    } finally {
      spark.stop();
    }
  }
}
