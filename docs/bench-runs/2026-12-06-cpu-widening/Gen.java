import java.nio.*;
import java.util.*;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.*;

// like scripts/bench/bench-data.py: uncompressed, no dictionary, row groups of 128 rows
public class Gen {
  public static void main(String[] a) throws Exception {
    String dir = a[0]; int count = Integer.parseInt(a[1]), files = Integer.parseInt(a[2]); String dtype = a[3];
    MessageType schema = MessageTypeParser.parseMessageType(
        "message schema { optional binary id (STRING); optional group shape (LIST) { repeated group list { optional int32 element; } } optional binary dtype (STRING); optional binary data; }");
    int n = 3 * 16 * 32 * 32; int per = count / files; int item = dtype.equals("int16") ? 2 : 4;
    SplittableRandom r = new SplittableRandom(0);
    byte[][] base = new byte[64][];
    for (int b = 0; b < 64; b++) {
      ByteBuffer bb = ByteBuffer.allocate(n * item).order(ByteOrder.LITTLE_ENDIAN);
      for (int k = 0; k < n; k++) { if (item == 2) bb.putShort((short) (r.nextInt(4096) - 1024)); else bb.putFloat((float) r.nextDouble()); }
      base[b] = bb.array();
    }
    SimpleGroupFactory f = new SimpleGroupFactory(schema);
    for (int fi = 0; fi < files; fi++) {
      long rowBytes = (long) n * item + 100;
      try (ParquetWriter<Group> w = ExampleParquetWriter.builder(new Path(dir + String.format("/part-%04d.parquet", fi)))
          .withType(schema).withCompressionCodec(CompressionCodecName.UNCOMPRESSED).withDictionaryEncoding(false)
          .withRowGroupSize(rowBytes * 128).withPageSize(1 << 20).withConf(new Configuration()).build()) {
        for (int i = fi * per; i < (fi + 1) * per; i++) {
          Group g = f.newGroup().append("id", String.format("vol-%07d", i));
          Group s = g.addGroup("shape");
          for (int d : new int[] {3, 16, 32, 32}) s.addGroup("list").append("element", d);
          g.append("dtype", dtype).append("data", Binary.fromConstantByteArray(base[i % 64]));
          w.write(g);
        }
      }
    }
    System.out.println("wrote " + per * files + " " + dtype + " volumes to " + dir);
  }
}
