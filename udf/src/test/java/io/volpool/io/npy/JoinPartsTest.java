package io.volpool.io.npy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The driver's join of committed .npy parts into their files, as on S3 (each file's parts copied in
 * order by a {@link PartsJoin}), here on the local filesystem: many files joined at once, each file's
 * parts in numeric order whatever their names sort as, and a file whose join fails failing the whole
 * join, named, once every other join has ended.
 */
class JoinPartsTest {
  static final int FILES = 40;

  /** Writes file {@code i}'s header and parts (channel.planes: 0.0.0, then d0 in 2, 10, 100) under the parts root. */
  static byte[] stage(Path staged, int i) throws IOException {
    Path dir = staged.resolve(NpyPlanesInPlace.PARTS + "/sub/f" + i + ".npy");
    Files.createDirectories(dir);
    Files.write(dir.resolve(NpyPlanesInPlace.HEADER), new byte[0]);
    ByteArrayOutputStream want = new ByteArrayOutputStream();
    for (String part : new String[] {"0.0.0", "0.0.2", "0.0.10", "0.0.100", "0.1.0"}) {
      byte[] b = (i + ":" + part + ";").getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      Files.write(dir.resolve(part), b);
      want.writeBytes(b);
    }
    return want.toByteArray();
  }

  @Test
  void manyFilesAreJoinedAtOnceEachInItsPartsOrder(@TempDir Path tmp) throws Exception {
    byte[][] want = new byte[FILES][];
    for (int i = 0; i < FILES; i++) {
      want[i] = stage(tmp, i);
    }
    FileSystem fs = FileSystem.getLocal(new Configuration()).getRawFileSystem();
    Set<String> threads = ConcurrentHashMap.newKeySet();
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    int n = NpyPlanesInPlace.joinParts(fs, new org.apache.hadoop.fs.Path(tmp.toUri()), NpyPlanesInPlace.Mode.COPIED_PARTS,
        (f, parts, target) -> {
          threads.add(Thread.currentThread().getName());
          most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
          try {
            Thread.sleep(20);
            PartsJoin.streamed(f, parts, target);
          } catch (InterruptedException e) {
            throw new IOException(e);
          } finally {
            inFlight.decrementAndGet();
          }
        });
    assertEquals(FILES, n);
    for (int i = 0; i < FILES; i++) {
      assertArrayEquals(want[i], Files.readAllBytes(tmp.resolve("sub/f" + i + ".npy")), "file " + i);
    }
    assertTrue(most.get() > 1, "joins ran at once: at most " + most.get() + " on " + threads);
    assertFalse(Files.exists(tmp.resolve(NpyPlanesInPlace.PARTS)), "the parts are removed once joined");
  }

  /** A parts folder with no file in it (every range task's output empty) joins nothing, and is removed. */
  @Test
  void anEmptyPartsFolderJoinsNothing(@TempDir Path tmp) throws Exception {
    Files.createDirectories(tmp.resolve(NpyPlanesInPlace.PARTS + "/sub"));
    FileSystem fs = FileSystem.getLocal(new Configuration()).getRawFileSystem();
    assertEquals(0, NpyPlanesInPlace.joinParts(fs, new org.apache.hadoop.fs.Path(tmp.toUri()),
        NpyPlanesInPlace.Mode.COPIED_PARTS, PartsJoin::streamed));
    assertFalse(Files.exists(tmp.resolve(NpyPlanesInPlace.PARTS)));
  }

  @Test
  void aFailedJoinFailsTheJoinNamingItsFileAfterTheOthersEnded(@TempDir Path tmp) throws Exception {
    for (int i = 0; i < FILES; i++) {
      stage(tmp, i);
    }
    FileSystem fs = FileSystem.getLocal(new Configuration()).getRawFileSystem();
    AtomicInteger joined = new AtomicInteger();
    IOException e = assertThrows(IOException.class, () -> NpyPlanesInPlace.joinParts(fs,
        new org.apache.hadoop.fs.Path(tmp.toUri()), NpyPlanesInPlace.Mode.COPIED_PARTS, (f, parts, target) -> {
          if (target.getName().equals("f7.npy")) {
            throw new IOException("copy of " + target.getName() + " refused");
          }
          PartsJoin.streamed(f, parts, target);
          joined.incrementAndGet();
        }));
    assertEquals("copy of f7.npy refused", e.getMessage());
    assertEquals(FILES - 1, joined.get(), "every other file joined before the failure was reported");
    assertTrue(Files.exists(tmp.resolve(NpyPlanesInPlace.PARTS)), "the parts are kept for a rerun");
  }
}
