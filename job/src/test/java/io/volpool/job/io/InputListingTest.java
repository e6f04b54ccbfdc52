package io.volpool.job.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Listing a local input: every file at any depth, hidden folders and non-input files reported, and
 * without a file's permission ever looked up (on the local filesystem, without Hadoop's native library,
 * each lookup runs {@code ls -ld} as a process; FileSystem.listFiles looked up every file's).
 */
class InputListingTest {
  @Test
  void aLocalInputIsListedWithoutLookingUpPermissions(@TempDir Path tmp) throws Exception {
    for (String f : List.of("y.npy", "a/b/x.npy", "a/c/deeper/v.NPY", "_hidden/z.npy", ".dot/w.npy", "notes.txt")) {
      Path p = tmp.resolve(f);
      Files.createDirectories(p.getParent());
      Files.write(p, new byte[] {1});
    }
    List<String> skipped = new ArrayList<>();
    List<FileStatus> got = InputPlanner.list(new org.apache.hadoop.fs.Path(tmp.toUri()), new Configuration(),
        n -> n.toLowerCase(java.util.Locale.ROOT).endsWith(".npy"), ".npy", skipped);
    assertThat(got).extracting(f -> tmp.toUri().relativize(f.getPath().toUri()).getPath())
        .containsExactly("a/b/x.npy", "a/c/deeper/v.NPY", "y.npy");
    assertThat(skipped).containsExactlyInAnyOrder("_hidden/z.npy (hidden: names starting with _ or . are not input)",
        ".dot/w.npy (hidden: names starting with _ or . are not input)", "notes.txt (not .npy)");
    // the local filesystem's statuses load owner, group and permission lazily: none may have been loaded
    Method loaded = Class.forName("org.apache.hadoop.fs.RawLocalFileSystem$DeprecatedRawLocalFileStatus")
        .getDeclaredMethod("isPermissionLoaded");
    loaded.setAccessible(true);
    for (FileStatus f : got) {
      assertThat(loaded.getDeclaringClass().isInstance(f)).as("%s is the local filesystem's own lazy status, not a copy"
          + " that looked its permission up (%s)", f.getPath(), f.getClass().getName()).isTrue();
      assertThat((Boolean) loaded.invoke(f)).as("permission of %s looked up while listing", f.getPath()).isFalse();
    }
  }
}
