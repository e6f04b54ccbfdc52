package io.volpool.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Stored values written in pieces of any size (elements split between calls, pieces larger than a
 * chunk) come out of the sink as the same floats a single widening gives, into a sink with windows
 * (pinned batch memory) and into one without (the CPU backend's arrays).
 */
class WideningSinkTest {
  @ParameterizedTest
  @ValueSource(strings = {"uint8", ">i2", "<u2", "float16", "bfloat16", "int32", ">f4", "<f8", ">f8"})
  void piecesOfAnySizeWidenAsOneCall(String dtype) {
    ValueType t = ValueType.parse(dtype);
    Random r = new Random(dtype.hashCode());
    for (int n : new int[] {1, 13, 4098, WideningSink.CHUNK / t.itemSize() * 3 + 7}) {
      byte[] stored = new byte[n * t.itemSize()];
      r.nextBytes(stored);
      Rescale rs = new Rescale(0.5f, -3f);
      ByteBuffer want = ByteBuffer.allocate(n * 4).order(ByteOrder.LITTLE_ENDIAN);
      t.widen(ByteBuffer.wrap(stored), n, want, rs);

      float[] viaPut = new float[n];
      VolumeSink s = WideningSink.of(new FloatSink(viaPut), t, rs);
      for (int at = 0; at < stored.length; ) {
        int k = Math.min(stored.length - at, 1 + r.nextInt(r.nextBoolean() ? 7 : 600_000));
        s.put(ByteBuffer.wrap(stored, at, k));
        at += k;
      }
      assertThat(s.position()).isEqualTo(stored.length);
      assertSame(want, viaPut, dtype + " put, n=" + n);

      WindowSink w = new WindowSink(n * 4, 1 + r.nextInt(5000) * 4);
      VolumeSink ws = WideningSink.of(w, t, rs);
      for (int at = 0; at < stored.length; ) {
        ByteBuffer win = ws.window(Math.min(stored.length - at, 1 + r.nextInt(100_000)));
        int k = win.remaining();
        win.put(stored, at, k);
        ws.advance(k);
        at += k;
      }
      float[] viaWindow = new float[n];
      w.buf.flip();
      w.buf.asFloatBuffer().get(viaWindow);
      assertSame(want, viaWindow, dtype + " windows, n=" + n);
    }
  }

  /**
   * One sink used volume after volume (as a batch or a reader uses it): each volume of another stored type and rescale,
   * one of them left with half an element, and every later volume still comes out as one widening gives.
   */
  @Test
  void oneSinkVolumeAfterVolume() {
    WideningSink reused = WideningSink.reusable();
    Random r = new Random(7);
    String[] dtypes = {"int16", "uint8", "float16", "<f8", "uint8", ">i2", "bfloat16"};
    for (int v = 0; v < dtypes.length; v++) {
      ValueType t = ValueType.parse(dtypes[v]);
      int n = 1 + r.nextInt(3 * WideningSink.CHUNK / t.itemSize());
      byte[] stored = new byte[n * t.itemSize()];
      r.nextBytes(stored);
      Rescale rs = new Rescale(1f + v, -v);
      ByteBuffer want = ByteBuffer.allocate(n * 4).order(ByteOrder.LITTLE_ENDIAN);
      t.widen(ByteBuffer.wrap(stored), n, want, rs);
      float[] got = new float[n];
      VolumeSink s = reused.to(new FloatSink(got), t, rs);
      assertThat(s).isSameAs(reused);
      if (v == 2) {
        // a volume given up with half an element held (a read that failed): the next one starts clean
        s.put(ByteBuffer.wrap(stored, 0, 3));
        continue;
      }
      for (int at = 0; at < stored.length; ) {
        int k = Math.min(stored.length - at, 1 + r.nextInt(400_000));
        s.put(ByteBuffer.wrap(stored, at, k));
        at += k;
      }
      assertThat(s.position()).isEqualTo(stored.length);
      assertSame(want, got, dtypes[v] + " as volume " + v + " of one sink");
    }
    FloatSink f = new FloatSink(new float[1]);
    assertThat(reused.to(f, ValueType.FLOAT32, Rescale.IDENTITY)).isSameAs(f);
  }

  @Test
  void float32WithoutRescaleIsTheBatchSinkItself() {
    FloatSink f = new FloatSink(new float[1]);
    assertThat(WideningSink.of(f, ValueType.FLOAT32, Rescale.IDENTITY)).isSameAs(f);
    assertThat(WideningSink.of(f, ValueType.parse(">f4"), Rescale.IDENTITY)).isNotSameAs(f);
    assertThat(WideningSink.of(f, ValueType.FLOAT32, new Rescale(2f, 0f))).isNotSameAs(f);
  }

  private static void assertSame(ByteBuffer want, float[] got, String what) {
    for (int i = 0; i < got.length; i++) {
      int w = want.getInt(i * 4);
      if (Float.floatToRawIntBits(got[i]) != w) {
        throw new AssertionError(what + ": element " + i + " is " + got[i] + ", one widening gives " + Float.intBitsToFloat(w));
      }
    }
  }

  /** A sink of plain bytes whose windows are at most {@code most} bytes, as pinned staging memory. */
  private static final class WindowSink implements VolumeSink {
    final ByteBuffer buf;
    final int most;

    WindowSink(int bytes, int most) {
      this.buf = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
      this.most = most;
    }

    @Override
    public void put(ByteBuffer src) {
      throw new AssertionError("a sink with windows is filled through them");
    }

    @Override
    public void putFloat(float v) {
      throw new AssertionError("a sink with windows is filled through them");
    }

    @Override
    public ByteBuffer window(int max) {
      ByteBuffer w = buf.slice();
      w.limit(Math.min(Math.min(max, most), w.remaining()));
      return w;
    }

    @Override
    public void advance(int n) {
      buf.position(buf.position() + n);
    }

    @Override
    public long position() {
      return buf.position();
    }
  }
}
