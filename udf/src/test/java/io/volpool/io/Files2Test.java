package io.volpool.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class Files2Test {
  @Test
  void aParquetFileIsOpenedWithTheGivenConfiguration(@TempDir Path tmp) throws Exception {
    // the caller's Configuration reaches the reader's options (no fresh Configuration parsed for each file): a
    // Parquet read setting in it takes effect both ways, here page checksum verification on a page with a flipped byte
    MessageType schema = MessageTypeParser.parseMessageType("message m { required int32 x; }");
    Path local = tmp.resolve("a.parquet");
    org.apache.hadoop.fs.Path file = Files2.hadoop(local);
    try (ParquetWriter<org.apache.parquet.example.data.Group> w = ExampleParquetWriter.builder(file).withType(schema)
        .withConf(new Configuration()).withPageWriteChecksumEnabled(true).withDictionaryEncoding(false).build()) {
      w.write(new SimpleGroupFactory(schema).newGroup().append("x", 0x5A5A5A5A));
    }
    byte[] bytes = java.nio.file.Files.readAllBytes(local);
    int at = -1;
    for (int i = 4; i + 4 <= bytes.length && at < 0; i++) {
      if (bytes[i] == 0x5A && bytes[i + 1] == 0x5A && bytes[i + 2] == 0x5A && bytes[i + 3] == 0x5A) {
        at = i;
      }
    }
    assertThat(at).as("the value's bytes in the data page").isPositive();
    bytes[at] ^= 1;
    java.nio.file.Files.write(local, bytes);
    for (boolean verify : new boolean[] {true, false}) {
      Configuration conf = new Configuration();
      conf.setBoolean("parquet.page.verify-checksum.enabled", verify);
      try (ParquetFileReader r = Files2.openParquet(file, conf)) {
        if (verify) {
          assertThatThrownBy(r::readNextRowGroup).hasMessageContaining("CRC checksum verification failed");
        } else {
          assertThat(r.readNextRowGroup().getRowCount()).isEqualTo(1);
        }
      }
    }
  }
}
