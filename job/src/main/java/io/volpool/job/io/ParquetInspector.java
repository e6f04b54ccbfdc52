package io.volpool.job.io;

import io.volpool.op.VolumeShape;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.schema.MessageType;

/**
 * Reads the footer of the input's first Parquet file on the driver: its schema (which decides the
 * tensor layout for every file) and the shapes of pyarrow {@code arrow.fixed_shape_tensor}
 * columns from the {@code ARROW:schema} metadata. Only data is read from the footer: no class
 * named in it is ever loaded. Stateless.
 */
public final class ParquetInspector {
  private static final Pattern SHAPE = Pattern.compile("\"shape\"\\s*:\\s*\\[([0-9,\\s]*)]");

  /** What the footer says. */
  public record Facts(MessageType schema, Map<String, VolumeShape> tensorShapes) {}

  private ParquetInspector() {}

  public static Facts inspect(Path file, Configuration conf) throws IOException {
    try (ParquetFileReader r = io.volpool.io.Files2.openParquet(file, conf)) {
      ParquetMetadata md = r.getFooter();
      Map<String, VolumeShape> shapes = new HashMap<>();
      String arrow = md.getFileMetaData().getKeyValueMetaData().get("ARROW:schema");
      if (arrow != null) {
        shapes.putAll(fixedShapeTensors(arrow));
      }
      return new Facts(md.getFileMetaData().getSchema(), shapes);
    }
  }

  /**
   * Column name to tensor shape for every {@code arrow.fixed_shape_tensor} field of a base64
   * Arrow IPC schema (as pyarrow stores it in {@code ARROW:schema}).
   */
  static Map<String, VolumeShape> fixedShapeTensors(String base64Schema) {
    Map<String, VolumeShape> out = new HashMap<>();
    Schema schema;
    try {
      byte[] raw = Base64.getDecoder().decode(base64Schema);
      schema = MessageSerializer.deserializeSchema(new ReadChannel(Channels.newChannel(new ByteArrayInputStream(raw))));
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
    try {
      for (int i = 0; i < 4; i++) {
        d[i] = Integer.parseInt(parts[i].trim());
      }
      return VolumeShape.of(d);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }
}
