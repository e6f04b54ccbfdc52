package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.Backend;
import io.volpool.backend.Batch;
import io.volpool.backend.BatchExecutor;
import io.volpool.cpu.CpuBackend;
import io.volpool.format.Dtype;
import io.volpool.format.NpyHeader;
import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.maxpool3d.MaxPool3dSpec;
import io.volpool.testing.Golden;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Batches that take the volumes' stored values and widen them themselves: every bit pattern of each
 * 8- and 16-bit dtype, in both byte orders, four volumes to a batch each with its own rescale (two
 * of them the identity), comes out as {@link ValueType#widen} gives it on the host, bit for bit
 * (PyTorch's {@code .to(torch.float32)}: ValueTypeTest). On the CPU backend (here and in CI: widened
 * as each volume loads) and on the GPU (copied at the stored width and widened on the device; the
 * executor must say so, else the test proves nothing). Then through pooling kernels: the same bytes
 * as float32 input widened by the reader.
 */
class StoredInputTest {
  private static final CpuBackend CPU = CpuBackend.fast(2);
  private static final Rescale[] RESCALES = {Rescale.IDENTITY, new Rescale(0.1f, -1024f), new Rescale(1f, 0f),
      new Rescale(-2.5f, 3f)};

  @AfterAll
  static void close() {
    CPU.close();
  }

  static Stream<Arguments> types() {
    Stream.Builder<Arguments> b = Stream.builder();
    for (String name : new String[] {"uint8", "int8", "uint16", "int16", "float16", "bfloat16"}) {
      for (boolean big : new boolean[] {false, true}) {
        if (!big || ValueType.parse(name).itemSize() > 1) {
          b.add(Arguments.of(name, big));
        }
      }
    }
    return b.build();
  }

  /** Every bit pattern of the dtype, as PyTorch's references hold them (stored bytes, little-endian). */
  static ByteBuffer patterns(String name) throws Exception {
    Path p = Golden.dtypesDir().resolve(name + ".npy");
    byte[] b = Files.readAllBytes(p);
    NpyHeader h = NpyHeader.parse(b, b.length, p.toString(), NpyHeader.DEFAULT_MAX_HEADER_BYTES);
    return ByteBuffer.wrap(b, (int) h.dataOffset(), b.length - (int) h.dataOffset()).slice();
  }

  static ByteBuffer swapped(ByteBuffer b, int size) {
    ByteBuffer out = ByteBuffer.allocate(b.remaining());
    for (int i = 0; i < b.remaining(); i += size) {
      for (int k = 0; k < size; k++) {
        out.put(i + k, b.get(b.position() + i + size - 1 - k));
      }
    }
    return out;
  }

  /**
   * Runs {@code n} volumes of {@code in} stored as {@code t} (in {@code stored}, volume after volume)
   * through {@code p} on {@code b}, volume {@code i} rescaled by {@code RESCALES[i % 4]}, batches of up to
   * {@code batch}, the executor opened for {@code open} (the stored type, or float32: the test widens);
   * stored values go in as pieces of {@code piece} bytes, which split elements as readers do. Returns the
   * outputs in order.
   */
  static ByteBuffer run(Backend b, Pipeline p, VolumeShape in, ValueType t, ValueType open, ByteBuffer stored, int n,
      int batch, int piece) {
    return run(b, p, in, t, open, stored, n, batch, piece, null);
  }

  /** As above; on the GPU, {@code kernels} (when not null) is what the batches' plan must launch. */
  static ByteBuffer run(Backend b, Pipeline p, VolumeShape in, ValueType t, ValueType open, ByteBuffer stored, int n,
      int batch, int piece, String kernels) {
    VolumeShape out = p.outputShape(in);
    long per = p.outputBytes(out);
    long perIn = in.numel() * t.itemSize();
    ByteBuffer y = ByteBuffer.allocate((int) (n * per)).order(ByteOrder.LITTLE_ENDIAN);
    try (BatchExecutor e = b.open(p, in, open, batch, 0, 4)) {
      assertThat(e.stored()).as("the values " + b.name(0) + " batches take").isEqualTo(open);
      if (kernels != null && e instanceof CudaExecutor ce) {
        assertThat(ce.plan().describe()).as("the kernels of " + p.describe() + " on " + open).isEqualTo(kernels);
      }
      int done = 0;
      while (done < n) {
        int k = Math.min(e.maxBatch(), n - done);
        try (Batch bt = e.newBatch(true)) {
          for (int i = 0; i < k; i++) {
            int v = done + i;
            ByteBuffer src = stored.slice((int) (v * perIn), (int) perIn);
            if (e.stored().isFloat32()) {
              ByteBuffer w = ByteBuffer.allocate((int) in.bytes());
              t.widen(src, (int) in.numel(), w, RESCALES[v % 4]);
              bt.input().put(w.flip());
            } else {
              bt.rescale(i, RESCALES[v % 4]);
              while (src.hasRemaining()) {
                int m = Math.min(src.remaining(), piece);
                bt.input().put(src.slice(src.position(), m));
                src.position(src.position() + m);
              }
            }
          }
          e.submit(bt, k, true);
          ByteBuffer o = bt.output();
          for (int i = 0; i < k; i++) {
            y.put(o.slice((int) bt.outputOffset(i), (int) per));
          }
        }
        done += k;
      }
    }
    return y.flip();
  }

  static void checkWidening(Backend b, String name, boolean big, boolean expectStored) throws Exception {
    ValueType t = new ValueType(ValueType.parse(name).dtype(), big);
    ByteBuffer le = patterns(name);
    ByteBuffer stored = big ? swapped(le, t.itemSize()) : le.duplicate();
    int count = le.remaining() / t.itemSize();
    int n = 4;
    VolumeShape in = new VolumeShape(1, 1, count / n / 8, 8);
    ByteBuffer got = run(b, Pipeline.of(), in, t, expectStored ? t : ValueType.FLOAT32, stored, n, 3, 777);
    for (int v = 0; v < n; v++) {
      ByteBuffer want = ByteBuffer.allocate((int) in.bytes()).order(ByteOrder.LITTLE_ENDIAN);
      t.widen(stored.slice((int) (v * in.numel() * t.itemSize()), (int) (in.numel() * t.itemSize())), (int) in.numel(),
          want, RESCALES[v % 4]);
      for (int i = 0; i < in.numel(); i++) {
        int w = want.getInt(4 * i);
        int g = got.getInt((int) (v * in.bytes() + 4 * i));
        boolean bothNan = Float.isNaN(Float.intBitsToFloat(w)) && Float.isNaN(Float.intBitsToFloat(g));
        // a NaN rescaled keeps its payload on the CPU; the GPU's multiply gives the canonical NaN
        if (g != w && !(bothNan && !RESCALES[v % 4].isIdentity())) {
          throw new AssertionError(t + " on " + b.name(0) + ", volume " + v + " (" + RESCALES[v % 4] + "), element " + i
              + ": 0x" + Integer.toHexString(g) + ", the host widens it to 0x" + Integer.toHexString(w));
        }
      }
    }
  }

  @ParameterizedTest(name = "{0}, big-endian {1}")
  @MethodSource("types")
  void cpuBatchesWidenStoredValuesAsTheHostDoes(String name, boolean big) throws Exception {
    checkWidening(CPU, name, big, true);
  }

  @ParameterizedTest(name = "{0}, big-endian {1}")
  @MethodSource("types")
  void gpuWidensStoredValuesOnTheDeviceBitForBit(String name, boolean big) throws Exception {
    checkWidening(Gpu.backend(), name, big, true);
  }

  static Stream<Arguments> pipelines() {
    AvgPool3dSpec k3 = new AvgPool3dSpec(3, 2, 1, false, true);
    MaxPool3dSpec mk3 = new MaxPool3dSpec(3, 2, 1, 1, false);
    return Stream.of(
        Arguments.of("avgpool3d", Pipeline.of(k3), new VolumeShape(3, 9, 11, 68), "int16", "widen -> avgpool_k3s2p1"),
        Arguments.of("maxpool3d", Pipeline.of(mk3), new VolumeShape(2, 7, 9, 11), "uint8", "widen -> maxpool_generic"),
        Arguments.of("fused then avgpool3d", Pipeline.of(Golden.get("fused_seed").fused(), k3),
            new VolumeShape(3, 16, 32, 32), "float16", "widen -> pipeline_taps2_c3_c16"),
        Arguments.of("avgpool3d, float16 out", Pipeline.of(k3).withOutput(Dtype.FLOAT16), new VolumeShape(1, 5, 6, 8),
            "uint16", "avgpool_k3s2p1_u16 -> narrow_f16"),
        // the one-read pools reading the stored values themselves (rows of a multiple of 8)
        Arguments.of("avgpool3d read as int16", Pipeline.of(k3), new VolumeShape(3, 9, 11, 64), "int16",
            "avgpool_k3s2p1_i16"),
        Arguments.of("avgpool3d read as bfloat16", Pipeline.of(new AvgPool3dSpec(3, 2, 1, true, false)),
            new VolumeShape(2, 6, 7, 136), "bfloat16", "avgpool_k3s2p1_bf16"),
        Arguments.of("maxpool3d read as float16", Pipeline.of(mk3), new VolumeShape(2, 7, 9, 16), "float16",
            "maxpool_k3s2p1_f16"),
        Arguments.of("maxpool3d then avgpool3d read as int8", Pipeline.of(mk3, k3), new VolumeShape(2, 9, 10, 24), "int8",
            "maxpool_k3s2p1_i8 -> avgpool_k3s2p1"),
        Arguments.of("maxpool3d read as uint16", Pipeline.of(new MaxPool3dSpec(3, 2, 1, 1, true)),
            new VolumeShape(1, 8, 8, 8), "uint16", "maxpool_k3s2p1_u16"));
  }

  /** Random stored values (finite for the floating types). */
  static ByteBuffer random(ValueType t, long count, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    ByteBuffer b = ByteBuffer.allocate((int) (count * t.itemSize())).order(ByteOrder.LITTLE_ENDIAN);
    for (long i = 0; i < count; i++) {
      if (t.itemSize() == 1) {
        b.put((byte) r.nextInt(256));
      } else if (t.dtype() == Dtype.FLOAT16 || t.dtype() == Dtype.BFLOAT16) {
        // finite: a sum's NaN keeps either operand's payload on the host (the widening of every pattern,
        // NaN included, is checked bit for bit above)
        b.putShort((short) (r.nextInt(t.dtype() == Dtype.FLOAT16 ? 0x7c00 : 0x7f80) | (r.nextBoolean() ? 0x8000 : 0)));
      } else {
        b.putShort((short) r.nextInt(65536));
      }
    }
    return b.flip();
  }

  static void checkKernels(Backend b, String name, Pipeline p, VolumeShape in, String type, String kernels) {
    ValueType t = ValueType.parse(type);
    int n = 5;
    ByteBuffer stored = random(t, n * in.numel(), in.numel());
    ByteBuffer widened = run(b, p, in, t, ValueType.FLOAT32, stored, n, 2, Integer.MAX_VALUE);
    ByteBuffer direct = run(b, p, in, t, t, stored, n, 2, Integer.MAX_VALUE, kernels);
    assertThat(direct).as(name + " on " + b.name(0) + ": stored " + t + " against float32 input").isEqualTo(widened);
  }

  /**
   * float16 windows whose maximum is a zero of either sign (and a few NaN): the stored-value max takes
   * the maximum on the stored pairs, so it must scan such windows again in PyTorch's order (its first
   * zero wins). Equal to float32 input bit for bit, but for a NaN's payload (the GPU's is canonical).
   */
  static void checkFloat16Zeros(Backend b, String kernels, boolean laneEdges) {
    ValueType t = ValueType.parse("float16");
    VolumeShape in = new VolumeShape(2, 9, 10, 32);
    int n = 5;
    short[] pick = {0x0000, (short) 0x8000, (short) 0xbc00, (short) 0x8000, 0x0000, (short) 0xc000, (short) 0x8001};
    SplittableRandom r = new SplittableRandom(11);
    ByteBuffer stored = ByteBuffer.allocate((int) (n * in.numel() * 2)).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; stored.hasRemaining(); i++) {
      int k = r.nextInt(100);
      // laneEdges: +0, but -0 in columns 16k + 7, the last column of every other lane's eight: the first zero of
      // the next lane's first window, in none of that lane's own columns
      stored.putShort(laneEdges ? (i % in.w() % 16 == 7 ? (short) 0x8000 : 0)
          : k == 0 ? (short) 0x7e01 : k == 1 ? (short) 0x3c00 : pick[r.nextInt(pick.length)]);
    }
    stored.flip();
    Pipeline p = Pipeline.of(new MaxPool3dSpec(3, 2, 1, 1, false));
    ByteBuffer widened = run(b, p, in, t, ValueType.FLOAT32, stored, n, 2, Integer.MAX_VALUE);
    ByteBuffer direct = run(b, p, in, t, t, stored, n, 2, Integer.MAX_VALUE, kernels);
    int zeros = 0;
    int negativeZeros = 0;
    for (int i = 0; i < widened.limit() / 4; i++) {
      int w = widened.getInt(4 * i);
      int g = direct.getInt(4 * i);
      zeros += (w & 0x7fffffff) == 0 ? 1 : 0;
      negativeZeros += w == 0x80000000 ? 1 : 0;
      boolean bothNan = Float.isNaN(Float.intBitsToFloat(w)) && Float.isNaN(Float.intBitsToFloat(g));
      if (g != w && !bothNan) {
        throw new AssertionError("float16 max on " + b.name(0) + ", output " + i + ": 0x" + Integer.toHexString(g)
            + ", float32 input gives 0x" + Integer.toHexString(w));
      }
    }
    assertThat(zeros).as("outputs that are a zero").isGreaterThan(1000);
    assertThat(negativeZeros).as("outputs that are -0 (a window's first zero was -0)").isGreaterThan(100);
  }

  @ParameterizedTest(name = "-0 at lane edges only: {0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void cpuFloat16MaxOfZerosKeepsTheFirstZero(boolean laneEdges) {
    checkFloat16Zeros(CPU, null, laneEdges);
  }

  @ParameterizedTest(name = "-0 at lane edges only: {0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void gpuFloat16MaxOfZerosKeepsTheFirstZero(boolean laneEdges) {
    checkFloat16Zeros(Gpu.backend(), "maxpool_k3s2p1_f16", laneEdges);
  }

  @ParameterizedTest(name = "{0}: {2} {3}")
  @MethodSource("pipelines")
  void cpuStoredInputGivesTheBytesOfFloat32Input(String name, Pipeline p, VolumeShape in, String type, String kernels) {
    checkKernels(CPU, name, p, in, type, null);
  }

  @ParameterizedTest(name = "{0}: {2} {3}")
  @MethodSource("pipelines")
  void gpuStoredInputGivesTheBytesOfFloat32InputThroughEveryKernel(String name, Pipeline p, VolumeShape in, String type,
      String kernels) {
    checkKernels(Gpu.backend(), name, p, in, type, kernels);
  }
}
