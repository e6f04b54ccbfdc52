package io.volpool.job;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** volpool's version, from the build (Maven filters it into {@code volpool-version.properties}). */
public final class Version {
  public static final String VERSION = read();

  private Version() {}

  private static String read() {
    try (InputStream in = Version.class.getResourceAsStream("/volpool-version.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version", "unknown");
    } catch (IOException e) {
      return "unknown";
    }
  }
}
