package io.volpool.io.parquet;

import io.volpool.io.ByteSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.xerial.snappy.Snappy;

/**
 * The streaming Snappy decoder against snappy-java (the C++ library parquet-java and pyarrow
 * compress with) over data that compresses in every way (literals only, short-period runs that
 * copy from themselves, repeats across 64 KiB), read in pieces of awkward sizes (so copies reach
 * back into bytes an earlier read handed out) into heap and direct buffers, with forward seeks; and
 * hand-made streams for what that library never writes (long literal lengths, 4-byte offsets,
 * copies past 64 KiB) and for corrupt pages.
 */
class SnappyPageSourceTest {
  static Stream<Arguments> data() {
    SplittableRandom r = new SplittableRandom(7);
    byte[] random = new byte[300_000];
    r.nextBytes(random);
    byte[] runs = new byte[200_003];
    for (int i = 0; i < runs.length; i++) {
      runs[i] = (byte) ((i / 97) % 3 == 0 ? 0 : i % (1 + (i / 5000) % 7));
    }
    byte[] repeats = new byte[400_000];
    byte[] block = new byte[70_000];
    r.nextBytes(block);
    for (int i = 0; i < repeats.length; i++) {
      repeats[i] = (byte) (block[i % block.length] ^ (i % 1013 == 0 ? 1 : 0));
    }
    byte[] floats = new byte[3 * 16 * 32 * 32 * 4 * 3];
    ByteBuffer f = ByteBuffer.wrap(floats).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < floats.length / 4; i++) {
      f.putFloat((float) (i % 3072) * 0.25f + i / 3072);
    }
    return Stream.of(Arguments.of("random", random), Arguments.of("runs", runs), Arguments.of("repeats", repeats),
        Arguments.of("floats", floats), Arguments.of("one byte", new byte[] {42}), Arguments.of("empty", new byte[0]));
  }

  static SnappyPageSource open(ByteBuffer page, long uncompressed, String name) throws IOException {
    return SnappyPageSource.open(SnappyPageSource.Compressed.of(page), uncompressed, name);
  }

  static ByteBuffer compressed(byte[] plain) throws IOException {
    return ByteBuffer.wrap(Snappy.compress(plain));
  }

  /** Reads the whole page through {@code src} in pieces of {@code 1 + rnd(max)} bytes, seeking over some. */
  static byte[] readInPieces(SnappyPageSource src, byte[] plain, int max, boolean direct, long seed) throws IOException {
    return readInPieces(src, plain, max, direct, java.nio.ByteOrder.BIG_ENDIAN, seed);
  }

  /**
   * The same, the direct pieces in byte order {@code order}: a GPU batch's pinned windows are
   * little-endian, and the bytes must come back as stored whatever the order of the buffer they land in.
   */
  static byte[] readInPieces(SnappyPageSource src, byte[] plain, int max, boolean direct, java.nio.ByteOrder order,
      long seed) throws IOException {
    SplittableRandom r = new SplittableRandom(seed);
    byte[] got = new byte[plain.length];
    Arrays.fill(got, (byte) 0x5a);
    byte[] expected = plain.clone();
    int p = 0;
    while (p < plain.length) {
      int n = Math.min(plain.length - p, 1 + r.nextInt(max));
      if (r.nextInt(8) == 0) {
        src.seek(p + n);
        Arrays.fill(expected, p, p + n, (byte) 0x5a);
      } else if (direct) {
        ByteBuffer d = ByteBuffer.allocateDirect(n + 8).order(order);
        d.position(3).limit(3 + n);
        src.readFully(d);
        assertThat(d.position()).isEqualTo(3 + n);
        d.position(3);
        d.get(got, p, n);
      } else {
        src.readFully(got, p, n);
      }
      p += n;
      assertThat(src.pos()).isEqualTo(p);
    }
    assertThat(got).isEqualTo(expected);
    return got;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("data")
  void piecesOfAnySizeComeBackAsSnappyJavaDecompressesThem(String name, byte[] plain) throws IOException {
    ByteBuffer c = compressed(plain);
    for (int max : new int[] {1, 5, 13, 4098, 65_536, 1 << 20}) {
      for (boolean direct : new boolean[] {false, true}) {
        SnappyPageSource s = open(c.duplicate(), plain.length, name);
        assertThat(s).as("%s: snappy-java reaches back at most 64 KiB", name).isNotNull();
        readInPieces(s, plain, max, direct, max * 31L + (direct ? 1 : 0));
      }
      // into little-endian windows, as a GPU batch's pinned staging is (the word-wise literal copy turned each
      // 8 bytes around there, and int16 volumes of repeated values came out wrong on the GPU only)
      SnappyPageSource s = open(c.duplicate(), plain.length, name);
      readInPieces(s, plain, max, true, java.nio.ByteOrder.LITTLE_ENDIAN, max * 37L);
    }
  }

  /**
   * A local file's page is mapped a window at a time: with windows of a few bytes every tag, literal
   * and length crosses one, and the page still comes back whole (the mapping never holds more).
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("data")
  void aMappedPageReadThroughSmallWindowsComesBackWhole(String name, byte[] plain, @org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) throws IOException {
    byte[] c = Snappy.compress(plain);
    java.nio.file.Path f = dir.resolve("page.bin");
    byte[] file = new byte[c.length + 17];
    System.arraycopy(c, 0, file, 11, c.length);
    java.nio.file.Files.write(f, file);
    try (ByteSource src = ByteSource.open(new org.apache.hadoop.fs.Path(f.toUri()), new org.apache.hadoop.conf.Configuration())) {
      assertThat(src.mappable()).isTrue();
      for (int window : new int[] {5, 6, 4097, SnappyPageSource.Compressed.WINDOW}) {
        SnappyPageSource.Compressed in = SnappyPageSource.Compressed.mapped(src, 11, c.length, window);
        try (SnappyPageSource s = SnappyPageSource.open(in, plain.length, name)) {
          assertThat(s).as("%s: snappy-java reaches back at most 64 KiB", name).isNotNull();
          readInPieces(s, plain, 70_000, window % 2 == 0, window);
        }
      }
    }
  }

  @Test
  void aPageInADirectBufferAtAnOffsetIsReadFromItsPosition() throws IOException {
    byte[] plain = new byte[100_000];
    new SplittableRandom(3).nextBytes(plain);
    for (int i = 50_000; i < plain.length; i++) {
      plain[i] = plain[i - 20_000];
    }
    byte[] c = Snappy.compress(plain);
    ByteBuffer d = ByteBuffer.allocateDirect(c.length + 100);
    d.position(57);
    d.put(c);
    d.position(57).limit(57 + c.length);
    SnappyPageSource s = open(d, plain.length, "direct");
    readInPieces(s, plain, 7000, true, 1);
  }

  @Test
  void readingPastThePageIsAnEndOfFileNamingThePage() throws IOException {
    byte[] plain = new byte[1000];
    SnappyPageSource s = open(compressed(plain), plain.length, "f.parquet");
    s.readFully(new byte[600], 0, 600);
    assertThatThrownBy(() -> s.readFully(new byte[401], 0, 401)).isInstanceOf(java.io.EOFException.class)
        .hasMessageContaining("f.parquet").hasMessageContaining("reading 401 bytes at 600")
        .hasMessageContaining("decompresses to 1000 bytes");
    assertThatThrownBy(() -> s.seek(10)).hasMessageContaining("forward only");
  }

  /** Hand-made streams: the tags snappy-java never writes for these inputs. */
  static final class Stream2 {
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream plain = new ByteArrayOutputStream();

    Stream2(int length) {
      varint(length);
    }

    void varint(long v) {
      while (v >= 0x80) {
        out.write((int) (v & 0x7f) | 0x80);
        v >>>= 7;
      }
      out.write((int) v);
    }

    /** A literal whose length takes {@code extra} bytes after the tag (0: in the tag). */
    Stream2 literal(byte[] b, int extra) {
      if (extra == 0) {
        out.write((b.length - 1) << 2);
      } else {
        out.write((59 + extra) << 2);
        for (int i = 0; i < extra; i++) {
          out.write((b.length - 1) >>> (8 * i));
        }
      }
      out.write(b, 0, b.length);
      plain.write(b, 0, b.length);
      return this;
    }

    /** A copy of {@code len} (1-64) bytes from {@code offset} back, with a tag of {@code kind} (1, 2 or 4 offset bytes). */
    Stream2 copy(int offset, int len, int kind) {
      if (kind == 1) {
        out.write(1 | ((len - 4) << 2) | ((offset >>> 8) << 5));
        out.write(offset);
      } else if (kind == 2) {
        out.write(2 | ((len - 1) << 2));
        out.write(offset);
        out.write(offset >>> 8);
      } else {
        out.write(3 | ((len - 1) << 2));
        for (int i = 0; i < 4; i++) {
          out.write(offset >>> (8 * i));
        }
      }
      byte[] p = plain.toByteArray();
      for (int i = 0; i < len; i++) {
        plain.write(p.length - offset + i < p.length ? p[p.length - offset + i] : plain.toByteArray()[p.length - offset + i]);
      }
      return this;
    }

    /** Bytes of the compressed stream as they are (a corrupt tag). */
    Stream2 raw(int... b) {
      for (int x : b) {
        out.write(x);
      }
      return this;
    }

    ByteBuffer page() {
      return ByteBuffer.wrap(out.toByteArray());
    }
  }

  static byte[] bytes(int n, int seed) {
    byte[] b = new byte[n];
    new SplittableRandom(seed).nextBytes(b);
    return b;
  }

  @Test
  void everyTagKindAndOverlappingCopiesDecode() throws IOException {
    Stream2 s = new Stream2(0);
    s.literal(bytes(1, 1), 0).copy(1, 11, 1).literal(bytes(60, 2), 1).literal(bytes(300, 3), 2)
        .literal(bytes(70_000, 4), 3).copy(3, 64, 2).copy(65_536, 64, 4).copy(2047, 9, 1).copy(70_000, 17, 4)
        .literal(bytes(5, 5), 4).copy(7, 64, 4);
    byte[] plain = s.plain.toByteArray();
    Stream2 t = new Stream2(plain.length);
    t.out.write(s.out.toByteArray(), 1, s.out.size() - 1);
    // the copy from 70,000 back reaches past the 64 KiB history: refused, for the whole-page path
    assertThat(open(t.page(), plain.length, "t")).isNull();
    assertThat(Snappy.uncompress(t.out.toByteArray())).as("the hand-made stream is valid Snappy").isEqualTo(plain);

    Stream2 u = new Stream2(0);
    u.literal(bytes(1, 1), 0).copy(1, 11, 1).literal(bytes(60, 2), 1).literal(bytes(300, 3), 2)
        .literal(bytes(70_000, 4), 3).copy(3, 64, 2).copy(65_536, 64, 4).copy(2047, 9, 1).literal(bytes(5, 5), 4)
        .copy(7, 64, 4);
    byte[] plain2 = u.plain.toByteArray();
    Stream2 v = new Stream2(plain2.length);
    v.out.write(u.out.toByteArray(), 1, u.out.size() - 1);
    assertThat(Snappy.uncompress(v.out.toByteArray())).isEqualTo(plain2);
    for (int max : new int[] {1, 3, 64, 5000, 1 << 20}) {
      SnappyPageSource src = open(v.page(), plain2.length, "v");
      readInPieces(src, plain2, max, max % 2 == 0, max);
    }
  }

  @Test
  void corruptPagesAreRefusedBeforeAnyByteIsHandedOut() throws IOException {
    byte[] plain = bytes(5000, 9);
    byte[] c = Snappy.compress(plain);
    assertThatThrownBy(() -> open(ByteBuffer.wrap(c), 5001, "p"))
        .hasMessageContaining("Snappy length 5000 where the page header says 5001");
    assertThatThrownBy(() -> open(ByteBuffer.wrap(Arrays.copyOf(c, c.length - 10)), 5000, "p"))
        .hasMessageContaining("runs past the page's end");
    byte[] longer = Arrays.copyOf(c, c.length + 2);
    longer[c.length] = 0; // a literal of one byte
    longer[c.length + 1] = 1;
    assertThatThrownBy(() -> open(ByteBuffer.wrap(longer), 5000, "p"))
        .hasMessageContaining("past the 5000 bytes");
    // one literal byte, then a copy of 19 from 2 back (one byte was written): the copy tag written by hand,
    // as the helper computes what a valid copy gives
    Stream2 before = new Stream2(20).literal(new byte[] {7}, 0).raw(2 | (18 << 2), 2, 0);
    assertThatThrownBy(() -> open(before.page(), 20, "p")).hasMessageContaining(
        "a copy from offset 2 at output byte 1 reaches before the page's start");
    Stream2 zero = new Stream2(5).literal(new byte[] {7}, 0).raw(2 | (3 << 2), 0, 0);
    assertThatThrownBy(() -> open(zero.page(), 5, "p")).hasMessageContaining("offset 0");
    Stream2 shortPage = new Stream2(9);
    shortPage.literal(bytes(4, 1), 0);
    assertThatThrownBy(() -> open(shortPage.page(), 9, "p"))
        .hasMessageContaining("decompresses to 4 bytes where the page header says 9");
  }
}
