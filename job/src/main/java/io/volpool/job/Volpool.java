package io.volpool.job;

import io.volpool.job.config.JobSettings;
import io.volpool.conf.SettingsException;
import io.volpool.op.Pipeline;
import io.volpool.op.SqlFunction;
import io.volpool.ops.Operators;
import io.volpool.op.VolumeShape;
import io.volpool.spark.RowInput;
import io.volpool.spark.RowTransform;
import io.volpool.spark.RunSpec;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF3;
import org.apache.spark.sql.api.java.UDF4;
import org.apache.spark.sql.api.java.UDF5;
import org.apache.spark.sql.api.java.UDF6;
import org.apache.spark.sql.api.java.UDF7;
import org.apache.spark.sql.api.java.UDF8;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * volpool inside any Spark application. {@link #transform} runs a pipeline over a DataFrame of
 * volumes, in batches, on the GPU or the CPU, and returns a DataFrame whose other columns pass
 * through, to filter, join or write anywhere. {@link #register} adds SQL functions that pool one
 * volume per call (on the CPU, since single volumes cannot fill a GPU batch), any stored dtype, with the
 * session's rescale and output dtype. Settings use the job's
 * names ({@code spark.volpool.pipeline}, {@code fused.weights}, ...; the prefix may be left out); the
 * session's {@code spark.volpool.*} settings are the defaults, explicit options override them.
 */
public final class Volpool {
  /**
   * The struct the SQL functions return, as {@link #transform}'s columns: the output shape, its dtype
   * ({@code spark.volpool.output.dtype}) and its little-endian bytes.
   */
  public static final StructType RESULT = new StructType()
      .add("shape", DataTypes.createArrayType(DataTypes.IntegerType, false), false)
      .add("dtype", DataTypes.StringType, false)
      .add("data", DataTypes.BinaryType, false);

  private Volpool() {}

  /**
   * Runs the pipeline of {@code options} over the volumes of {@code in}: the binary layout
   * ({@code shape} array&lt;int&gt;, {@code dtype} string, {@code data} binary) or an array&lt;float&gt;
   * column with {@code spark.volpool.input.tensorShape}. Lazy, like any transformation.
   *
   * @return the other columns of {@code in}, then {@code shape}, {@code dtype} and {@code data}
   * @throws SettingsException naming the option and the rule
   */
  public static Dataset<Row> transform(Dataset<Row> in, Map<String, String> options) {
    SparkSession spark = in.sparkSession();
    JobSettings s = JobSettings.forTransform(sessionSettings(spark), options);
    Pipeline pipeline;
    try {
      pipeline = VolpoolJob.pipeline(s, spark.sparkContext().hadoopConfiguration());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    RowInput.Layout layout;
    try {
      layout = RowInput.Layout.of(in.schema(), s.tensorColumn(), s.tensorShape());
    } catch (IllegalArgumentException e) {
      throw new SettingsException("Volpool.transform: " + e.getMessage(), e);
    }
    for (String col : new String[] {s.rescale().slopeColumn(), s.rescale().interceptColumn()}) {
      if (col != null && (!java.util.Arrays.asList(in.schema().fieldNames()).contains(col)
          || !(in.schema().apply(col).dataType() instanceof org.apache.spark.sql.types.NumericType))) {
        throw new SettingsException("Volpool.transform: rescale column '" + col + "' must be a numeric column of the input,"
            + " whose columns are " + in.schema().simpleString());
      }
    }
    RunSpec spec = VolpoolJob.runSpec(s, spark, pipeline, null, null, 0, false);
    return in.mapPartitions(new RowTransform(spec, layout), Encoders.row(layout.outputSchema()));
  }

  /**
   * The session's {@code spark.volpool.*} settings ({@code --conf} at submit, {@code spark.conf.set}):
   * the defaults of {@link #transform}, under its explicit options.
   */
  static Map<String, String> sessionSettings(SparkSession spark) {
    Map<String, String> m = new java.util.LinkedHashMap<>();
    scala.collection.Iterator<scala.Tuple2<String, String>> it = spark.conf().getAll().iterator();
    while (it.hasNext()) {
      scala.Tuple2<String, String> kv = it.next();
      if (kv._1().startsWith(io.volpool.conf.VolpoolOptions.PREFIX)) {
        m.put(kv._1(), kv._2());
      }
    }
    return m;
  }

  /** Stages of SQL calls by function and arguments: a model file is read once per JVM, not once per row. */
  private static final ConcurrentHashMap<String, io.volpool.op.Stage> STAGES = new ConcurrentHashMap<>();

  /**
   * Registers every operator's SQL functions ({@code io.volpool.ops.Operators}), e.g.
   * {@code volpool_avgpool3d(data, shape, dtype, kernel, stride, padding)},
   * {@code volpool_maxpool3d(data, shape, dtype, kernel_size, stride, padding)} and
   * {@code volpool_fused(data, shape, dtype, 'model.safetensors')}, each returning
   * {@code struct<shape, dtype, data>}. {@code data}, {@code shape} and {@code dtype} are a volume's
   * columns in the binary layout (any dtype the job reads); the session's rescale constants
   * ({@code spark.volpool.input.rescale.slope}, {@code .intercept}) and output dtype apply, as in
   * {@link #transform}. A bad volume or argument fails the query naming the rule, as the job does.
   */
  public static void register(SparkSession spark) {
    register(spark, Map.of());
  }

  /** {@link #register(SparkSession)} with {@code options} over the session's settings, as {@link #transform} takes them. */
  public static void register(SparkSession spark, Map<String, String> options) {
    // each SQL function names its own operator: the session's pipeline, set or not, is not theirs
    Map<String, String> o = new java.util.LinkedHashMap<>(options);
    o.put(Operators.PIPELINE.key(), Operators.IDENTITY);
    JobSettings s = JobSettings.forTransform(sessionSettings(spark), o);
    if (s.rescale().perRow()) {
      throw new SettingsException("Volpool.register: the SQL functions take the rescale constants ("
          + io.volpool.conf.VolpoolOptions.INPUT_RESCALE_SLOPE.key() + ", "
          + io.volpool.conf.VolpoolOptions.INPUT_RESCALE_INTERCEPT.key() + "), not rescale columns ("
          + io.volpool.conf.VolpoolOptions.INPUT_RESCALE_SLOPE_COLUMN.key() + ", "
          + io.volpool.conf.VolpoolOptions.INPUT_RESCALE_INTERCEPT_COLUMN.key() + "): unset them for register, or use"
          + " Volpool.transform, which reads each row's columns");
    }
    Values v = new Values(s.rescale().fixed(), s.outputDtype());
    for (SqlFunction f : Operators.sqlFunctions()) {
      // the closures capture the function's name and the values only: Spark serializes them into every task that
      // reads a table (a file scan, unlike a local relation, is not evaluated on the driver), and an operator's
      // SqlFunction and builder are not serializable; the task looks the function up by name
      String fn = f.name();
      int n = f.params().size();
      switch (n) {
        case 1 -> spark.udf().register(fn, (UDF4<byte[], scala.collection.Seq<Object>, String, Object, Row>)
            (data, shape, dtype, a) -> run(fn, v, data, shape, dtype, a), RESULT);
        case 2 -> spark.udf().register(fn, (UDF5<byte[], scala.collection.Seq<Object>, String, Object, Object, Row>)
            (data, shape, dtype, a, b) -> run(fn, v, data, shape, dtype, a, b), RESULT);
        case 3 -> spark.udf().register(fn, (UDF6<byte[], scala.collection.Seq<Object>, String, Object, Object, Object,
            Row>) (data, shape, dtype, a, b, c) -> run(fn, v, data, shape, dtype, a, b, c), RESULT);
        case 4 -> spark.udf().register(fn, (UDF7<byte[], scala.collection.Seq<Object>, String, Object, Object, Object,
            Object, Row>) (data, shape, dtype, a, b, c, d) -> run(fn, v, data, shape, dtype, a, b, c, d), RESULT);
        case 5 -> spark.udf().register(fn, (UDF8<byte[], scala.collection.Seq<Object>, String, Object, Object, Object,
            Object, Object, Row>) (data, shape, dtype, a, b, c, d, e) -> run(fn, v, data, shape, dtype, a, b, c, d, e),
            RESULT);
        default -> throw new IllegalStateException(fn + " takes " + n + " arguments after data, shape and dtype;"
            + " register handles 1 to 5");
      }
    }
  }

  /** What every SQL call of one registration applies: the input rescale and the output dtype. */
  private record Values(io.volpool.format.Rescale rescale, io.volpool.format.Dtype out) implements java.io.Serializable {}

  /** Every operator's SQL functions by name, in the JVM that runs the call. */
  private static final class Functions {
    static final Map<String, SqlFunction> BY_NAME;

    static {
      Map<String, SqlFunction> m = new java.util.HashMap<>();
      for (SqlFunction f : Operators.sqlFunctions()) {
        m.put(f.name(), f);
      }
      BY_NAME = Map.copyOf(m);
    }

    static SqlFunction get(String name) {
      SqlFunction f = BY_NAME.get(name);
      if (f == null) {
        throw new IllegalStateException("no volpool SQL function " + name + " in this JVM (known: " + BY_NAME.keySet()
            + "); the executors run another volpool jar than the driver");
      }
      return f;
    }
  }

  /** The stage of one call, built by its operator from checked arguments. */
  private static io.volpool.op.Stage stage(SqlFunction f, Object[] args) {
    String key = f.name() + java.util.Arrays.deepToString(args);
    io.volpool.op.Stage cached = STAGES.get(key);
    if (cached != null) {
      return cached;
    }
    io.volpool.op.Stage st;
    try {
      st = f.builder().build(new SqlFunction.Args() {
        @Override
        public int intArg(int i) {
          return Volpool.intArg(f.params().get(i), args[i]);
        }

        @Override
        public boolean boolArg(int i) {
          return Volpool.boolArg(f.params().get(i), args[i]);
        }

        @Override
        public String stringArg(int i) {
          if (args[i] instanceof String v) {
            return v;
          }
          throw new IllegalArgumentException("volpool: " + f.params().get(i) + " must be a string, got "
              + (args[i] == null ? "null" : args[i] + " (" + args[i].getClass().getSimpleName() + ")"));
        }

        @Override
        public byte[] readFile(String path, io.volpool.op.OperatorInputs.HeadCheck check) throws IOException {
          try {
            Path hp = new Path(path);
            FileSystem fs = hp.getFileSystem(new org.apache.hadoop.conf.Configuration());
            long length = fs.getFileStatus(hp).getLen();
            try (InputStream head = fs.open(hp)) {
              check.check(head, length);
            }
            try (InputStream in = fs.open(hp)) {
              return in.readNBytes((int) Math.min(length, Integer.MAX_VALUE - 64));
            }
          } catch (IOException e) {
            throw new IOException(f.name() + ": cannot read " + path + ": " + e.getMessage(), e);
          }
        }
      });
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    STAGES.putIfAbsent(key, st);
    return st;
  }

  /**
   * An integer argument of a SQL function: any integral SQL type ({@code 3}, {@code 3L}, a bigint
   * column), in int range.
   */
  static int intArg(String name, Object v) {
    if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
      long l = ((Number) v).longValue();
      if (l >= Integer.MIN_VALUE && l <= Integer.MAX_VALUE) {
        return (int) l;
      }
    }
    throw new IllegalArgumentException("volpool: " + name + " must be an integer (int or bigint), got "
        + (v == null ? "null" : v + " (" + v.getClass().getSimpleName() + ")"));
  }

  static boolean boolArg(String name, Object v) {
    if (v instanceof Boolean b) {
      return b;
    }
    throw new IllegalArgumentException("volpool: " + name + " must be a boolean, got "
        + (v == null ? "null" : v + " (" + v.getClass().getSimpleName() + ")"));
  }

  /** Pipelines run by the SQL functions in this JVM: tests check that one result read twice ran once. */
  static final java.util.concurrent.atomic.AtomicLong RUNS = new java.util.concurrent.atomic.AtomicLong();

  /** The last call of this thread: its inputs and result. */
  private record Last(long task, String key, io.volpool.format.ValueType type, Values values, int[] shape, byte[] data,
      Row result) {}

  /**
   * Spark's optimizer inlines a struct-valued function into each field read of it ({@code r.shape},
   * {@code r.data}), so one row calls it once per field with equal arguments: the thread's last
   * result is returned for equal inputs instead of running the kernel again.
   */
  private static final ThreadLocal<Last> LAST = new ThreadLocal<>();

  private static Row run(String fn, Values v, byte[] data, scala.collection.Seq<Object> shape, String dtype,
      Object... args) {
    SqlFunction f = Functions.get(fn);
    if (data == null || shape == null) {
      return null;
    }
    String record = fn + " call";
    VolumeShape in = io.volpool.io.RowRules.shape(record, scala.jdk.javaapi.CollectionConverters.asJava(shape));
    io.volpool.format.ValueType type = io.volpool.io.RowRules.dtype(record, dtype);
    io.volpool.io.RowRules.length(record, in, type, data.length);
    String key = fn + java.util.Arrays.toString(args);
    Last last = LAST.get();
    if (last != null && last.key().equals(key) && last.type().equals(type) && last.values().equals(v)
        && java.util.Arrays.equals(last.shape(), in.toArray()) && java.util.Arrays.equals(last.data(), data)) {
      return last.result();
    }
    Pipeline p = Pipeline.of(stage(f, args));
    int numel = Math.toIntExact(in.numel());
    ByteBuffer wide = ByteBuffer.allocate(numel * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    type.widen(ByteBuffer.wrap(data), numel, wide, v.rescale());
    float[] x = new float[numel];
    wide.flip().asFloatBuffer().get(x);
    VolumeShape os = p.outputShape(in);
    float[] y = io.volpool.exec.ExecutorRuntime.runOneOnCpu(p, in, x);
    RUNS.incrementAndGet();
    ByteBuffer out = ByteBuffer.allocate(y.length * v.out().itemSize());
    io.volpool.format.Narrow.put(y, 0, out, 0, y.length, v.out());
    List<Integer> s = new ArrayList<>();
    for (int d : os.toArray()) {
      s.add(d);
    }
    Row result = RowFactory.create(scala.jdk.javaapi.CollectionConverters.asScala(s).toSeq(), v.out().numpyName(),
        out.array());
    org.apache.spark.TaskContext tc = org.apache.spark.TaskContext.get();
    long task = tc == null ? -1 : tc.taskAttemptId();
    if (tc != null && (last == null || last.task() != task)) {
      tc.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) ctx -> LAST.remove());
    }
    LAST.set(new Last(task, key, type, v, in.toArray(), data, result));
    return result;
  }
}
