package io.volpool.spark;

import io.volpool.io.ShippedConf;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import org.apache.hadoop.conf.Configuration;

/**
 * Carries a Hadoop {@link Configuration} (Writable, not Serializable) to executors, without the
 * properties that only repeat Hadoop's bundled defaults ({@link io.volpool.io.ShippedConf}): the executor gets the
 * whole configuration back over its own parsed defaults.
 */
public final class SerializableHadoopConf implements Serializable {
  private static final long serialVersionUID = 1L;
  private transient Configuration conf;

  public SerializableHadoopConf(Configuration conf) {
    this.conf = conf;
  }

  public Configuration get() {
    return conf;
  }

  private void writeObject(ObjectOutputStream out) throws IOException {
    out.defaultWriteObject();
    ShippedConf.shrink(conf).write(out);
  }

  private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
    in.defaultReadObject();
    Configuration shipped = new Configuration(false);
    shipped.readFields(in);
    conf = ShippedConf.restore(shipped);
  }
}
