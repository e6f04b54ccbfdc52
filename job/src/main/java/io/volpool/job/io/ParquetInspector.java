package io.volpool.job.io;

import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.ByteArrayInputStream;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Reads the footers of a few input Parquet files on the driver: the largest row (to size Spark's
 * vectorized reader batches so 512 MiB tensors never overflow a column vector) and the shapes of
 * pyarrow {@code arrow.fixed_shape_tensor} columns from the {@code ARROW:schema} metadata. Stateless.
 */
public final class ParquetInspector {
  /** Footers read at most; files of one dataset share a layout. */
  static final int SAMPLE_FILES = 8;
  private static final Pattern SHAPE = Pattern.compile("\"shape\"\\s*:\\s*\\[([0-9,\\s]*)]");

  /** What the footers say. */
  public record Facts(int files, long maxRowBytes, Map<String, VolumeShape> tensorShapes) {}

  private ParquetInspector() {}

  public static Facts inspect(String input, Configuration conf) throws IOException {
    List<Path> files = sample(new Path(input), conf);
    long maxRow = 0;
    Map<String, VolumeShape> shapes = new HashMap<>();
    for (Path p : files) {
      try (ParquetFileReader r = ParquetFileReader.open(HadoopInputFile.fromPath(p, conf))) {
        ParquetMetadata md = r.getFooter();
        for (BlockMetaData b : md.getBlocks()) {
          if (b.getRowCount() > 0) {
            maxRow = Math.max(maxRow, (b.getTotalByteSize() + b.getRowCount() - 1) / b.getRowCount());
          }
        }
        String arrow = md.getFileMetaData().getKeyValueMetaData().get("ARROW:schema");
        if (arrow != null) {
          shapes.putAll(fixedShapeTensors(arrow));
        }
      }
    }
    return new Facts(files.size(), maxRow, shapes);
  }

  private static List<Path> sample(Path root, Configuration conf) throws IOException {
    FileSystem fs = root.getFileSystem(conf);
    List<Path> out = new ArrayList<>();
    FileStatus st = fs.getFileStatus(root);
    if (st.isFile()) {
      out.add(root);
      return out;
    }
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
    while (it.hasNext() && out.size() < SAMPLE_FILES) {
      LocatedFileStatus f = it.next();
      String n = f.getPath().getName();
      if (f.isFile() && !n.startsWith("_") && !n.startsWith(".") && f.getLen() > 0) {
        out.add(f.getPath());
      }
    }
    return out;
  }

  /**
   * Column name to tensor shape for every {@code arrow.fixed_shape_tensor} field of a base64
   * Arrow IPC schema (as pyarrow stores it in {@code ARROW:schema}).
   */
  static Map<String, VolumeShape> fixedShapeTensors(String base64Schema) {
    Map<String, VolumeShape> out = new HashMap<>();
    byte[] raw = Base64.getDecoder().decode(base64Schema);
    Schema schema;
    try {
      schema = MessageSerializer.deserializeSchema(
          new ReadChannel(Channels.newChannel(new ByteArrayInputStream(raw))));
    } catch (IOException | RuntimeException e) {
      // not an Arrow schema we can read: the user can still give spark.volpool.input.tensorShape
      return out;
    }
    for (Field f : schema.getFields()) {
      Map<String, String> md = f.getMetadata();
      if ("arrow.fixed_shape_tensor".equals(md.get("ARROW:extension:name"))) {
        VolumeShape s = parseShape(md.get("ARROW:extension:metadata"));
        if (s != null) {
          out.put(f.getName(), s);
        }
      }
    }
    return out;
  }

  static VolumeShape parseShape(String json) {
    if (json == null) {
      return null;
    }
    Matcher m = SHAPE.matcher(json);
    if (!m.find()) {
      return null;
    }
    String[] parts = m.group(1).split(",");
    if (parts.length != 4) {
      return null;
    }
    int[] d = new int[4];
    for (int i = 0; i < 4; i++) {
      d[i] = Integer.parseInt(parts[i].trim());
    }
    return VolumeShape.of(d);
  }
}
