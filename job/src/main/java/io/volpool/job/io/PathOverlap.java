package io.volpool.job.io;

import io.volpool.conf.SettingsException;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Refuses an output that would destroy or re-read the job's own inputs: the output may not be an
 * input, contain one, or lie inside one. Paths are compared qualified (scheme, authority, normalised
 * path) so {@code /data/x}, {@code file:/data/x} and {@code /data/y/../x} are the same path; on the
 * local filesystem symbolic links are resolved too. Stateless.
 */
public final class PathOverlap {
  private PathOverlap() {}

  /**
   * @param output the output setting's path
   * @param outputKey the setting that named it, for the message
   * @param input a path the job reads
   * @param inputKey the setting that named it
   * @throws SettingsException naming both paths and the rule, before anything is written or deleted
   */
  public static void check(String output, String outputKey, String input, String inputKey, Configuration conf)
      throws IOException {
    Path out = canonical(new Path(output), conf);
    Path in = canonical(new Path(input), conf);
    String rule;
    if (out.equals(in)) {
      rule = "is the same path as";
    } else if (isWithin(in, out)) {
      rule = "contains";
    } else if (isWithin(out, in)) {
      rule = "lies inside";
    } else {
      return;
    }
    throw new OverlapException(outputKey + "=" + output + " " + rule + " " + inputKey + "=" + input + " (" + out + " vs "
        + in + "): the job would " + (rule.equals("lies inside") ? "read its own output as input on the next run"
            : "delete or overwrite what it reads") + "; choose an output outside the input and beside it, not above it");
  }

  /** Whether {@code a} and {@code b} are one path or one lies inside the other (compared canonical). */
  public static boolean overlap(String a, String b, Configuration conf) throws IOException {
    Path x = canonical(new Path(a), conf);
    Path y = canonical(new Path(b), conf);
    return x.equals(y) || isWithin(x, y) || isWithin(y, x);
  }

  /** The output overlaps what the job reads: nothing may be written beside it, not even the run's status. */
  public static final class OverlapException extends SettingsException {
    private static final long serialVersionUID = 1L;

    OverlapException(String message) {
      super(message);
    }
  }

  /** True when {@code child} is strictly below {@code parent} (both canonical). */
  static boolean isWithin(Path child, Path parent) {
    URI c = child.toUri();
    URI p = parent.toUri();
    if (!Objects.equals(c.getScheme(), p.getScheme()) || !Objects.equals(c.getAuthority(), p.getAuthority())) {
      return false;
    }
    String pp = p.getPath().endsWith("/") ? p.getPath() : p.getPath() + "/";
    return c.getPath().startsWith(pp) && c.getPath().length() > pp.length();
  }

  /**
   * The qualified, normalised path; on the local filesystem the longest existing prefix is resolved
   * through symbolic links, so a link to the input is recognised as the input.
   */
  static Path canonical(Path p, Configuration conf) throws IOException {
    FileSystem fs = p.getFileSystem(conf);
    Path q = fs.makeQualified(p);
    if (!"file".equals(q.toUri().getScheme())) {
      return q;
    }
    java.nio.file.Path local = io.volpool.io.Files2.local(q).toAbsolutePath().normalize();
    Deque<String> missing = new ArrayDeque<>();
    java.nio.file.Path existing = local;
    while (existing != null && !Files.exists(existing)) {
      missing.push(existing.getFileName().toString());
      existing = existing.getParent();
    }
    java.nio.file.Path real = existing == null ? local.getRoot() : existing.toRealPath();
    while (!missing.isEmpty()) {
      real = real.resolve(missing.pop());
    }
    return fs.makeQualified(io.volpool.io.Files2.hadoop(real));
  }
}
