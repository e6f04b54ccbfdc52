package io.volpool.io;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.JobConf;

/**
 * A Hadoop {@link Configuration} carried to tasks without the properties that only repeat Hadoop's
 * bundled defaults ({@code core-default.xml}, {@code mapred-default.xml}, {@code yarn-default.xml}):
 * about 1,070 of the 1,080 in a Spark session's configuration. Hadoop writes each property with its
 * sources gzip-compressed, so the whole configuration costs 45-50 ms to write and as much to read in
 * a cold JVM, and Spark's output writer ({@code saveAsNewAPIHadoopDataset}) carries one in every task:
 * a wall-clock profile of the 1,024-volume job on the H200 showed each first-wave task spending about
 * 0.2 s reading it.
 *
 * <p>{@link #shrink} keeps the properties that did not come from a default resource, the names of
 * those resources, and the default keys that were removed; {@link #restore}, where the configuration
 * is used (the output format and its committers), lays them over the same default resources, loaded
 * once per JVM ({@link #warm}, on the warm-up thread), so that it holds what the driver held. Stateless
 * apart from that per-JVM cache of parsed defaults, which lives as long as the JVM.
 */
public final class ShippedConf {
  /** The default resources a shrunk configuration left out, comma-separated; absent: not shrunk. */
  public static final String DEFAULTS = "volpool.conf.defaults";
  /** Keys of those defaults that the configuration had removed (unset), comma-separated. */
  public static final String UNSET = "volpool.conf.unset";

  private static final Map<String, Configuration> BASES = new ConcurrentHashMap<>();

  private ShippedConf() {}

  /**
   * The properties of {@code full} that its default resources do not give, with what {@link #restore}
   * needs to give it back. {@code full} is not changed.
   */
  public static Configuration shrink(Configuration full) {
    // sorted, so that one set of resources is one cache entry; the order does not matter (see below)
    Set<String> resources = new TreeSet<>();
    List<Map.Entry<String, String>> own = new ArrayList<>();
    for (Map.Entry<String, String> e : full) {
      String[] sources = full.getPropertySources(e.getKey());
      if (sources != null && sources.length > 0 && Arrays.stream(sources).allMatch(ShippedConf::isDefaultResource)) {
        resources.addAll(Arrays.asList(sources));
      } else {
        own.add(e);
      }
    }
    if (resources.isEmpty()) {
      return full;
    }
    String names = String.join(",", resources);
    Configuration base = base(names);
    Configuration shipped = new Configuration(false);
    for (Map.Entry<String, String> e : own) {
      shipped.set(e.getKey(), e.getValue());
    }
    List<String> unset = new ArrayList<>();
    for (Map.Entry<String, String> e : base) {
      if (full.getRaw(e.getKey()) == null) {
        unset.add(e.getKey());
      } else if (!full.getRaw(e.getKey()).equals(e.getValue()) && shipped.getRaw(e.getKey()) == null) {
        // a default resource's value that a later default resource overrode differently here
        shipped.set(e.getKey(), full.getRaw(e.getKey()));
      }
    }
    shipped.set(DEFAULTS, names);
    if (!unset.isEmpty()) {
      shipped.set(UNSET, String.join(",", unset));
    }
    return shipped;
  }

  /**
   * The configuration {@code shipped} was shrunk from: its properties over the default resources it
   * names, loaded on this JVM; {@code shipped} itself when it was not shrunk.
   */
  public static Configuration restore(Configuration shipped) {
    String names = shipped.getRaw(DEFAULTS);
    return names == null ? shipped : apply(shipped, new Configuration(base(names)));
  }

  /**
   * As {@link #restore}, as a {@link JobConf}, which Hadoop's job and task contexts take without
   * copying it again; a copy of {@code shipped} when it was not shrunk.
   */
  public static JobConf restoreJob(Configuration shipped) {
    String names = shipped.getRaw(DEFAULTS);
    return names == null ? new JobConf(shipped) : apply(shipped, new JobConf(base(names)));
  }

  private static <C extends Configuration> C apply(Configuration shipped, C full) {
    for (Map.Entry<String, String> e : shipped) {
      if (!e.getKey().equals(DEFAULTS) && !e.getKey().equals(UNSET)) {
        full.set(e.getKey(), e.getValue());
      }
    }
    String unset = shipped.getRaw(UNSET);
    if (unset != null) {
      for (String k : unset.split(",")) {
        full.unset(k);
      }
    }
    return full;
  }

  /**
   * Parses Hadoop's usual default resources on this thread, so that the first tasks' {@link #restore}
   * finds them parsed (the warm-up's step; 30-100 ms in a cold JVM).
   *
   * @return what was loaded, for the warm-up's log line
   */
  public static String warm() {
    long t0 = System.nanoTime();
    Configuration c = base("core-default.xml,mapred-default.xml,yarn-default.xml");
    return c.size() + " Hadoop default properties parsed in " + (System.nanoTime() - t0) / 1_000_000 + " ms";
  }

  private static boolean isDefaultResource(String source) {
    return source.endsWith("-default.xml") && !source.contains("/");
  }

  private static Configuration base(String names) {
    return BASES.computeIfAbsent(names, n -> {
      Configuration c = new Configuration(false);
      for (String r : n.split(",")) {
        c.addResource(r);
      }
      c.size(); // parses now, once
      return c;
    });
  }
}
