package io.volpool.format;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mutation fuzzing of the .npy and safetensors parsers: bit flips, byte edits, truncation,
 * extension, header text edits, length and offset edits, over fixed seeds plus one random seed
 * printed in the log. Every mutant must either be rejected with {@link TensorFormatException} or be
 * accepted and read exactly as the reference reads it: numpy itself for .npy (when python3 has
 * numpy), and a strict reference reader written here from the safetensors rules for safetensors. Any
 * other exception, a hang or running out of memory fails the test.
 */
class ParserFuzzTest {
  static final int MUTATIONS = Integer.getInteger("volpool.fuzz.mutations", 10_000);
  static final long[] SEEDS = {1, 2, 3};

  static long seed() {
    long s = Long.getLong("volpool.fuzz.seed", System.nanoTime());
    System.out.println("fuzz: random seed " + s + " (rerun with -Dvolpool.fuzz.seed=" + s + ")");
    return s;
  }

  /** Counts of one fuzz run. */
  static final class Counts {
    int mutations;
    int rejected;
    int acceptedIdentical;
    final List<String> other = new ArrayList<>();

    @Override
    public String toString() {
      return mutations + " mutations: " + rejected + " rejected, " + acceptedIdentical + " accepted and identical, "
          + other.size() + " other";
    }
  }

  static byte[] mutate(byte[] base, SplittableRandom r, int headerEnd) {
    byte[] b = base.clone();
    switch (r.nextInt(8)) {
      case 0: { // bit flips, most in the header
        int n = 1 + r.nextInt(3);
        for (int i = 0; i < n; i++) {
          int at = r.nextInt(4) == 0 ? r.nextInt(b.length) : r.nextInt(Math.min(b.length, headerEnd + 1));
          b[at] ^= (byte) (1 << r.nextInt(8));
        }
        return b;
      }
      case 1: // truncation
        return Arrays.copyOf(b, r.nextInt(b.length));
      case 2: { // extension
        byte[] e = Arrays.copyOf(b, b.length + 1 + r.nextInt(64));
        for (int i = b.length; i < e.length; i++) {
          e[i] = (byte) r.nextInt(256);
        }
        return e;
      }
      case 3: { // a header character replaced by one of the syntax's own
        String pick = "'\"{}(),:[] 0123456789-+_LTFeu.\\\n#x";
        b[8 + r.nextInt(Math.max(1, headerEnd - 8))] = (byte) pick.charAt(r.nextInt(pick.length()));
        return b;
      }
      case 4: { // a length field edited (.npy header length, safetensors header length)
        int at = r.nextInt(2) == 0 ? 8 : r.nextInt(Math.min(12, b.length));
        b[at] = (byte) (b[at] + (r.nextBoolean() ? 1 : -1) * (1 + r.nextInt(4)));
        return b;
      }
      case 5: { // a random byte anywhere
        b[r.nextInt(b.length)] = (byte) r.nextInt(256);
        return b;
      }
      case 6: { // a span of the header duplicated in place
        int from = 8 + r.nextInt(Math.max(1, headerEnd - 8));
        int len = 1 + r.nextInt(Math.max(1, Math.min(24, headerEnd - from)));
        byte[] e = new byte[b.length + len];
        System.arraycopy(b, 0, e, 0, from + len);
        System.arraycopy(b, from, e, from + len, b.length - from);
        return e;
      }
      default: { // a digit in the header replaced (shapes, offsets)
        List<Integer> digits = new ArrayList<>();
        for (int i = 8; i < Math.min(headerEnd, b.length); i++) {
          if (b[i] >= '0' && b[i] <= '9') {
            digits.add(i);
          }
        }
        if (!digits.isEmpty()) {
          b[digits.get(r.nextInt(digits.size()))] = (byte) ('0' + r.nextInt(10));
        }
        return b;
      }
    }
  }

  // ---------------------------------------------------------------- .npy

  static List<byte[]> npySeeds() throws IOException {
    List<byte[]> out = new ArrayList<>();
    for (String f : new String[] {"c_f4.npy", "f8.npy", "be_f4.npy", "be_f8.npy", "fortran_f4.npy", "v2_f4.npy", "v3_f4.npy"}) {
      out.add(NpyTest.fixture(f));
    }
    return out;
  }

  static String digest(long[] shape, ByteBuffer f32) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    md.update(Arrays.toString(shape).replace(" ", "").getBytes(StandardCharsets.UTF_8));
    ByteBuffer d = f32.duplicate();
    byte[] all = new byte[d.remaining()];
    d.get(all);
    md.update(all);
    return HexFormat.of().formatHex(md.digest());
  }

  @Test
  void npyMutantsAreRejectedOrReadAsNumpyReadsThem(@TempDir Path tmp) throws Exception {
    Counts c = new Counts();
    List<byte[]> seeds = npySeeds();
    Map<String, String> accepted = new LinkedHashMap<>();
    long[] runSeeds = Arrays.copyOf(SEEDS, SEEDS.length + 1);
    long random = seed();
    runSeeds[SEEDS.length] = random;
    int perSeed = MUTATIONS / runSeeds.length + 1;
    long t0 = System.nanoTime();
    for (long s : runSeeds) {
      SplittableRandom r = new SplittableRandom(s);
      for (int i = 0; i < perSeed; i++) {
        byte[] base = seeds.get(r.nextInt(seeds.size()));
        byte[] m = mutate(base, r, 10 + ((base[8] & 0xff) | (base[9] & 0xff) << 8));
        c.mutations++;
        try {
          NpyArray a = Npy.read(m, "mutant.npy");
          String name = "m" + c.mutations + ".npy";
          Files.write(tmp.resolve(name), m);
          accepted.put(name, digest(a.shape(), a.data()));
        } catch (TensorFormatException e) {
          c.rejected++;
        } catch (RuntimeException | Error e) {
          c.other.add(e + " on a mutant of seed " + s + " #" + i);
        }
      }
    }
    assertThat(System.nanoTime() - t0).as("no hang").isLessThan(TimeUnit.SECONDS.toNanos(120));
    Map<String, String> numpy = numpyDigests(tmp, accepted.keySet());
    if (numpy != null) {
      for (Map.Entry<String, String> e : accepted.entrySet()) {
        String ref = numpy.get(e.getKey());
        if (e.getValue().equals(ref)) {
          c.acceptedIdentical++;
        } else {
          c.other.add(e.getKey() + ": volpool read " + e.getValue() + " but numpy " + ref + "; header "
              + headerText(Files.readAllBytes(tmp.resolve(e.getKey()))));
        }
      }
    } else {
      c.acceptedIdentical = accepted.size();
      System.out.println("fuzz: numpy not available; accepted .npy mutants were not compared with numpy");
    }
    System.out.println("fuzz .npy: " + c);
    assertThat(c.mutations).as("replay with -Dvolpool.fuzz.seed=" + random).isGreaterThanOrEqualTo(MUTATIONS);
    assertThat(c.other).as("neither rejected with TensorFormatException nor read as numpy reads it (replay this whole"
        + " run with -Dvolpool.fuzz.seed=" + random + ")").isEmpty();
  }

  /** The header of a .npy mutant as a Java string literal would write it, for the failure message. */
  static String headerText(byte[] b) {
    int at = b.length > 6 && b[6] >= 2 ? 12 : 10;
    long n = b.length < at ? 0 : (b[8] & 0xff) | (b[9] & 0xff) << 8;
    if (at == 12) {
      n |= (b[10] & 0xffL) << 16 | (b[11] & 0xffL) << 24;
    }
    StringBuilder out = new StringBuilder("v" + (b.length > 6 ? b[6] : 0) + " \"");
    for (int i = at; i < Math.min(b.length, at + n); i++) {
      int c = b[i] & 0xff;
      if (c == '\\' || c == '"') {
        out.append('\\').append((char) c);
      } else if (c >= 32 && c < 127) {
        out.append((char) c);
      } else {
        out.append(String.format("\\x%02x", c));
      }
    }
    return out.append('"').toString();
  }

  /** numpy's verdict on each file: the digest of its float32 C-order data and shape, or the error. */
  static Map<String, String> numpyDigests(Path dir, Iterable<String> names) throws Exception {
    Path list = dir.resolve("list.txt");
    Files.write(list, names);
    String py = String.join("\n",
        "import sys, hashlib, numpy as np",
        "d = sys.argv[1]",
        "for n in open(d + '/list.txt').read().split():",
        "    try:",
        "        a = np.load(d + '/' + n, allow_pickle=False)",
        "        if a.dtype.kind != 'f' or a.dtype.itemsize not in (4, 8):",
        "            print(n, 'dtype', a.dtype); continue",
        "        b = np.ascontiguousarray(a.astype('<f4'))",
        "        h = hashlib.sha256(); h.update(str(list(a.shape)).replace(' ', '').encode()); h.update(b.tobytes())",
        "        print(n, h.hexdigest())",
        "    except Exception as e:",
        "        print(n, 'error', type(e).__name__)");
    Process p;
    try {
      p = new ProcessBuilder("python3", "-c", py, dir.toString()).redirectErrorStream(true).start();
    } catch (IOException e) {
      return null;
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor(120, TimeUnit.SECONDS);
    if (out.contains("No module named")) {
      return null;
    }
    Map<String, String> m = new LinkedHashMap<>();
    for (String line : out.split("\n")) {
      int sp = line.indexOf(' ');
      if (sp > 0) {
        m.put(line.substring(0, sp), line.substring(sp + 1));
      }
    }
    return m;
  }

  // ---------------------------------------------------------------- safetensors

  static byte[] safetensors(String header, byte[] data) {
    byte[] h = header.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(8 + h.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(h.length).put(h).put(data);
    return b.array();
  }

  static List<byte[]> safetensorSeeds() throws IOException {
    List<byte[]> out = new ArrayList<>();
    out.add(Files.readAllBytes(io.volpool.testing.Golden.get("fused_seed").model()));
    byte[] d = new byte[24 + 8 + 4];
    for (int i = 0; i < d.length; i++) {
      d[i] = (byte) (i * 37);
    }
    out.add(safetensors("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},\"b\":{\"dtype\":\"F64\","
        + "\"shape\":[1],\"data_offsets\":[24,32]},\"c\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[32,36]},"
        + "\"__metadata__\":{\"stride\":\"2\"}}", d));
    out.add(safetensors("{\"x\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[0,2]}}  ", new byte[] {0, 60}));
    return out;
  }

  /** The reference: the safetensors format's own rules, read independently of {@link SafeTensors}. */
  static Map<String, float[]> reference(byte[] b) {
    if (b.length < 8) {
      return null;
    }
    long n = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
    if (n < 0 || n > 100_000_000 || 8 + n > b.length) {
      return null;
    }
    String header;
    try {
      header = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(b, 8, (int) n)).toString();
    } catch (Exception e) {
      return null;
    }
    if (!header.startsWith("{")) {
      return null;
    }
    JsonNode root;
    try {
      root = new ObjectMapper().enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
          .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS).readTree(header);
    } catch (Exception e) {
      return null;
    }
    if (root == null || !root.isObject()) {
      return null;
    }
    long dataLen = b.length - 8 - n;
    Map<String, float[]> out = new LinkedHashMap<>();
    List<long[]> spans = new ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      JsonNode v = e.getValue();
      if (e.getKey().equals("__metadata__")) {
        for (Iterator<JsonNode> m = v.elements(); m.hasNext(); ) {
          if (!m.next().isTextual()) {
            return null;
          }
        }
        if (!v.isObject()) {
          return null;
        }
        continue;
      }
      String dt = v.path("dtype").isTextual() ? v.path("dtype").asText() : "";
      int item = dt.equals("F32") ? 4 : dt.equals("F64") ? 8 : dt.equals("F16") || dt.equals("BF16") ? 2 : -1;
      JsonNode sh = v.path("shape");
      JsonNode of = v.path("data_offsets");
      if (item < 0 || !sh.isArray() || !of.isArray() || of.size() != 2) {
        return null;
      }
      java.math.BigInteger count = java.math.BigInteger.ONE;
      for (JsonNode d : sh) {
        if (!d.isIntegralNumber() || d.bigIntegerValue().signum() < 0) {
          return null;
        }
        count = count.multiply(d.bigIntegerValue());
      }
      if (!of.get(0).isIntegralNumber() || !of.get(1).isIntegralNumber()) {
        return null;
      }
      java.math.BigInteger s0 = of.get(0).bigIntegerValue();
      java.math.BigInteger s1 = of.get(1).bigIntegerValue();
      if (s0.signum() < 0 || s1.compareTo(s0) < 0 || s1.compareTo(java.math.BigInteger.valueOf(dataLen)) > 0
          || !s1.subtract(s0).equals(count.multiply(java.math.BigInteger.valueOf(item)))) {
        return null;
      }
      spans.add(new long[] {s0.longValue(), s1.longValue()});
      int numel = count.intValueExact();
      float[] f = new float[numel];
      ByteBuffer d = ByteBuffer.wrap(b, (int) (8 + n + s0.longValue()), numel * item).slice().order(ByteOrder.LITTLE_ENDIAN);
      for (int i = 0; i < numel; i++) {
        f[i] = item == 4 ? d.getFloat() : item == 8 ? (float) d.getDouble()
            : dt.equals("F16") ? f16(d.getShort()) : Float.intBitsToFloat((d.getShort() & 0xffff) << 16);
      }
      out.put(e.getKey(), f);
    }
    spans.sort((x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
    long at = 0;
    for (long[] s : spans) {
      if (s[0] != at) {
        return null;
      }
      at = s[1];
    }
    return at == dataLen ? out : null;
  }

  /** IEEE half to float, written out here so the reference does not share the parser's conversion. */
  static float f16(short h) {
    int sign = (h >> 15) & 1;
    int e = (h >> 10) & 0x1f;
    int m = h & 0x3ff;
    float v = e == 0 ? m * 0x1p-24f : e == 31 ? (m == 0 ? Float.POSITIVE_INFINITY : Float.NaN)
        : (float) Math.scalb(1 + m / 1024.0, e - 15);
    return sign == 1 ? -v : v;
  }

  @Test
  void safetensorsMutantsAreRejectedOrReadAsTheFormatRulesRead() throws Exception {
    Counts c = new Counts();
    List<byte[]> seeds = safetensorSeeds();
    long[] runSeeds = Arrays.copyOf(SEEDS, SEEDS.length + 1);
    long random = seed();
    runSeeds[SEEDS.length] = random;
    int perSeed = MUTATIONS / runSeeds.length + 1;
    for (long s : runSeeds) {
      SplittableRandom r = new SplittableRandom(s);
      for (int i = 0; i < perSeed; i++) {
        byte[] base = seeds.get(r.nextInt(seeds.size()));
        int headerEnd = 8 + (int) ByteBuffer.wrap(base).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        byte[] m = mutate(base, r, headerEnd);
        c.mutations++;
        Map<String, float[]> ref;
        try {
          ref = reference(m);
        } catch (ArithmeticException e) {
          ref = null;
        }
        try {
          SafeTensors t = SafeTensors.read(m, "mutant.safetensors");
          boolean same = ref != null && ref.keySet().equals(t.tensors().keySet());
          if (same) {
            for (String k : ref.keySet()) {
              same &= Arrays.equals(ref.get(k), t.tensors().get(k).values());
            }
          }
          if (same) {
            c.acceptedIdentical++;
          } else {
            c.other.add("accepted what the format rules " + (ref == null ? "reject" : "read differently")
                + " (seed " + s + " #" + i + "): " + new String(m, 8, Math.max(0, Math.min(m.length - 8, headerEnd - 8)),
                StandardCharsets.UTF_8));
          }
        } catch (TensorFormatException e) {
          c.rejected++;
        } catch (RuntimeException | Error e) {
          c.other.add(e + " on a mutant of seed " + s + " #" + i);
        }
      }
    }
    System.out.println("fuzz safetensors: " + c);
    assertThat(c.mutations).as("replay with -Dvolpool.fuzz.seed=" + random).isGreaterThanOrEqualTo(MUTATIONS);
    assertThat(c.other).as("neither rejected nor read as the format's rules read it (replay this whole run with"
        + " -Dvolpool.fuzz.seed=" + random + ")").isEmpty();
  }
}
