package io.volpool.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.junit.jupiter.api.Test;

class ShippedConfTest {
  /** Every raw property, as the tasks would see it. */
  private static Map<String, String> props(Configuration c) {
    Map<String, String> m = new TreeMap<>();
    for (Map.Entry<String, String> e : c) {
      m.put(e.getKey(), e.getValue());
    }
    return m;
  }

  /** Through Hadoop's own serialization, as Spark carries a configuration to an executor (no defaults loaded). */
  private static Configuration carried(Configuration c) throws Exception {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream o = new DataOutputStream(b)) {
      c.write(o);
    }
    Configuration d = new Configuration(false);
    d.readFields(new DataInputStream(new ByteArrayInputStream(b.toByteArray())));
    return d;
  }

  /** A job's configuration as the driver holds it: the defaults, a site-like property, the job's own, an unset default. */
  private static Configuration jobConf() throws Exception {
    Configuration full = Job.getInstance(new Configuration()).getConfiguration();
    full.set("fs.s3a.endpoint", "http://127.0.0.1:9000"); // set by the user (spark.hadoop.*)
    full.set("io.file.buffer.size", "65536"); // a default the user changed
    full.set("mapreduce.output.fileoutputformat.outputdir", "file:/tmp/out");
    full.unset("hadoop.tmp.dir"); // a default removed
    return full;
  }

  @Test
  void theTasksGetBackEveryPropertyTheDriverHeld() throws Exception {
    Configuration full = jobConf();
    assertThat(props(full)).hasSizeGreaterThan(500); // Hadoop's defaults are there to leave out

    Configuration shipped = carried(ShippedConf.shrink(full));
    Configuration back = ShippedConf.restore(shipped);

    Map<String, String> want = props(full);
    Map<String, String> got = props(back);
    assertThat(got).isEqualTo(want);
    assertThat(back.get("hadoop.tmp.dir")).as("a default the driver had removed").isNull();
    // a default only in mapred-default.xml that the S3A committer factory is found by
    assertThat(back.get("mapreduce.outputcommitter.factory.scheme.s3a")).isNotNull();
  }

  @Test
  void whatIsShippedIsTheDriversOwnPropertiesNotHadoopsDefaults() throws Exception {
    Configuration full = jobConf();
    Configuration shipped = ShippedConf.shrink(full);
    Map<String, String> p = props(shipped);
    assertThat(p).containsEntry("fs.s3a.endpoint", "http://127.0.0.1:9000").containsEntry("io.file.buffer.size", "65536")
        .containsEntry("mapreduce.output.fileoutputformat.outputdir", "file:/tmp/out")
        .containsEntry(ShippedConf.UNSET, "hadoop.tmp.dir")
        .doesNotContainKey("mapreduce.outputcommitter.factory.scheme.s3a");
    assertThat(p.get(ShippedConf.DEFAULTS)).contains("core-default.xml").contains("mapred-default.xml");
    assertThat(p.size()).as("shipped properties of %s", props(full).size()).isLessThan(20);
    ByteArrayOutputStream whole = new ByteArrayOutputStream();
    ByteArrayOutputStream small = new ByteArrayOutputStream();
    full.write(new DataOutputStream(whole));
    shipped.write(new DataOutputStream(small));
    assertThat(small.size()).as("bytes carried in each task").isLessThan(whole.size() / 20);
  }

  @Test
  void aConfigurationWithoutDefaultsGoesAsItIs() throws Exception {
    Configuration bare = new Configuration(false);
    bare.set("a.b", "c");
    assertThat(ShippedConf.shrink(bare)).isSameAs(bare);
    assertThat(ShippedConf.restore(bare)).isSameAs(bare);
  }

  @Test
  void changesMadeToTheShippedConfigurationOnTheExecutorAreKept() throws Exception {
    // Spark sets the task's ids on the configuration it built from what was shipped; restoring keeps them
    Configuration shipped = carried(ShippedConf.shrink(jobConf()));
    shipped.set("mapreduce.task.attempt.id", "attempt_1_0001_m_000003_0");
    Configuration back = ShippedConf.restore(shipped);
    assertThat(back.get("mapreduce.task.attempt.id")).isEqualTo("attempt_1_0001_m_000003_0");
    assertThat(back.get(ShippedConf.DEFAULTS)).isNull();
  }
}
