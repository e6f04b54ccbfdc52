package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.Backend;
import io.volpool.backend.Batch;
import io.volpool.backend.BatchExecutor;
import io.volpool.cpu.CpuBackend;
import io.volpool.format.Dtype;
import io.volpool.format.Narrow;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.fused.FusedOp;
import io.volpool.ops.maxpool3d.MaxPool3dSpec;
import io.volpool.testing.Golden;
import io.volpool.testing.RandomData;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The output dtype as a batch executor writes it: each volume's float16 or bfloat16 values at its
 * offset, equal bit for bit to the same backend's float32 output narrowed by {@link Narrow}, on the
 * CPU backend (here and in CI) and on the GPU (narrowed on the device before the copy back; skipped
 * without one). On the GPU, the narrowing kernels also take every value PyTorch's references hold
 * (ties, overflow, subnormals, NaN) to PyTorch's bits.
 */
class NarrowOutputTest {
  private static final CpuBackend CPU = CpuBackend.fast(2);

  @AfterAll
  static void close() {
    CPU.close();
  }

  static Stream<Arguments> cases() {
    FusedOp ref = Golden.get("fused_seed").fused();
    AvgPool3dSpec k3 = new AvgPool3dSpec(3, 2, 1, false, true);
    MaxPool3dSpec mk3 = new MaxPool3dSpec(3, 2, 1, 1, false);
    return Stream.of(
        Arguments.of("identity", Pipeline.of(), new VolumeShape(2, 3, 4, 5), 5, 2),
        Arguments.of("identity, odd count", Pipeline.of(), new VolumeShape(1, 1, 3, 3), 3, 2),
        Arguments.of("avgpool3d", Pipeline.of(k3), new VolumeShape(3, 9, 11, 68), 5, 2),
        Arguments.of("maxpool3d", Pipeline.of(mk3), new VolumeShape(2, 7, 9, 11), 3, 2),
        Arguments.of("fused", Pipeline.of(ref), new VolumeShape(3, 16, 32, 32), 3, 2),
        Arguments.of("fused then avgpool3d", Pipeline.of(ref, k3), new VolumeShape(3, 16, 32, 32), 4, 4),
        Arguments.of("fused then maxpool3d", Pipeline.of(ref, mk3), new VolumeShape(3, 6, 8, 16), 3, 2));
  }

  /** Inputs that cross float16's range: most near 1, some beyond 65504, some tiny, a NaN and infinities. */
  static float[] inputs(long count, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    float[] x = RandomData.uniform(r, count, -2, 2);
    for (int i = 0; i < x.length; i += 7) {
      x[i] *= 60000f;
    }
    for (int i = 3; i < x.length; i += 11) {
      x[i] *= 1e-6f;
    }
    x[x.length / 2] = Float.NaN;
    x[x.length / 3] = Float.POSITIVE_INFINITY;
    x[x.length / 5] = Float.NEGATIVE_INFINITY;
    return x;
  }

  /** Runs {@code p} on {@code b} in batches of {@code batch} and returns each output volume's bytes, in order. */
  static ByteBuffer run(Backend b, Pipeline p, VolumeShape in, float[] x, int n, int batch, int gap) {
    VolumeShape out = p.outputShape(in);
    long per = p.outputBytes(out);
    ByteBuffer y = ByteBuffer.allocate((int) (n * per)).order(ByteOrder.LITTLE_ENDIAN);
    try (BatchExecutor e = b.open(p, in, batch, 0, gap)) {
      int done = 0;
      while (done < n) {
        int k = Math.min(e.maxBatch(), n - done);
        try (Batch bt = e.newBatch(true)) {
          ByteBuffer src = ByteBuffer.allocate((int) (k * in.bytes())).order(ByteOrder.LITTLE_ENDIAN);
          src.asFloatBuffer().put(x, (int) (done * in.numel()), (int) (k * in.numel()));
          bt.input().put(src);
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

  static void assertNarrowOf(ByteBuffer narrow, ByteBuffer f32, Dtype t, String what) {
    assertThat(narrow.remaining()).as(what + " bytes").isEqualTo(f32.remaining() / 2);
    for (int i = 0; i < narrow.remaining() / 2; i++) {
      float f = f32.getFloat(4 * i);
      short want = Narrow.to(t, f);
      short got = narrow.getShort(2 * i);
      if (got != want) {
        throw new AssertionError(what + ": element " + i + " is 0x" + Integer.toHexString(got & 0xffff) + ", float32 " + f
            + " narrowed to " + t.numpyName() + " is 0x" + Integer.toHexString(want & 0xffff));
      }
    }
  }

  static void check(Backend b, String name, Pipeline p, VolumeShape in, int n, int batch) {
    float[] x = inputs(n * in.numel(), in.numel() + n);
    int gap = batch % 2 == 0 ? 4 : 0;
    ByteBuffer f32 = run(b, p, in, x, n, batch, gap);
    for (Dtype t : new Dtype[] {Dtype.FLOAT16, Dtype.BFLOAT16}) {
      assertNarrowOf(run(b, p.withOutput(t), in, x, n, batch, gap), f32, t, name + " as " + t.numpyName() + " on " + b.name(0));
    }
  }

  @ParameterizedTest(name = "{0}: {2} x{3}, batch {4}")
  @MethodSource("cases")
  void cpuBatchesNarrowTheirFloat32Output(String name, Pipeline p, VolumeShape in, int n, int batch) {
    check(CPU, name, p, in, n, batch);
  }

  @ParameterizedTest(name = "{0}: {2} x{3}, batch {4}")
  @MethodSource("cases")
  void gpuNarrowsOnTheDeviceBitForBit(String name, Pipeline p, VolumeShape in, int n, int batch) {
    CudaBackend b = Gpu.backend();
    assertThat(KernelPlan.of(p.withOutput(Dtype.FLOAT16), in).describe()).endsWith("narrow_f16");
    check(b, name, p, in, n, batch);
    // and the same bytes as the CPU's
    float[] x = inputs(n * in.numel(), 99);
    for (Dtype t : new Dtype[] {Dtype.FLOAT16, Dtype.BFLOAT16}) {
      ByteBuffer g = run(b, p.withOutput(t), in, x, n, batch, 4);
      ByteBuffer c = run(CPU, p.withOutput(t), in, x, n, batch, 4);
      if (p.stages().isEmpty() || p.stages().get(p.stages().size() - 1) instanceof MaxPool3dSpec) {
        // copies and maxima are exact in float32 on both, so their narrow bytes are the same
        assertThat(g).as(name + " " + t.numpyName() + ": GPU bytes against the CPU's").isEqualTo(c);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"float16", "bfloat16"})
  void gpuKernelsRoundEveryReferenceValueAsPytorch(String name) throws Exception {
    CudaBackend b = Gpu.backend();
    Path dir = Golden.dtypesDir();
    ByteBuffer in = data(dir.resolve("f32_narrow_in.npy"));
    ByteBuffer want = data(dir.resolve("f32_to_" + name + ".npy"));
    float[] x = new float[in.remaining() / 4];
    in.asFloatBuffer().get(x);
    Dtype t = name.equals("float16") ? Dtype.FLOAT16 : Dtype.BFLOAT16;
    ByteBuffer got = run(b, Pipeline.of().withOutput(t), new VolumeShape(1, 1, 1, x.length), x, 1, 1, 4);
    assertThat(got.remaining()).isEqualTo(want.remaining());
    for (int i = 0; i < x.length; i++) {
      if (got.getShort(2 * i) != want.getShort(2 * i)) {
        throw new AssertionError(name + " on the GPU: " + x[i] + " (0x" + Integer.toHexString(Float.floatToRawIntBits(x[i]))
            + ") became 0x" + Integer.toHexString(got.getShort(2 * i) & 0xffff) + ", PyTorch gives 0x"
            + Integer.toHexString(want.getShort(2 * i) & 0xffff));
      }
    }
  }

  static ByteBuffer data(Path p) throws Exception {
    byte[] b = Files.readAllBytes(p);
    io.volpool.format.NpyHeader h = io.volpool.format.NpyHeader.parse(b, b.length, p.toString(),
        io.volpool.format.NpyHeader.DEFAULT_MAX_HEADER_BYTES);
    return ByteBuffer.wrap(b, (int) h.dataOffset(), b.length - (int) h.dataOffset()).slice().order(ByteOrder.LITTLE_ENDIAN);
  }
}
