package io.volpool.io;

import io.volpool.io.npy.NpyFileRef;
import io.volpool.io.npy.NpyVolumeInput;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.format.Npy;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A plain .npy volume read by position, plane range by plane range: into float windows (the CPU)
 * and straight into direct byte windows (the GPU's pinned memory) give the same values, at the
 * same places, with the channel stride and offset the slab asks for.
 */
class PositionedPlanesTest {
  @Test
  void floatAndDirectByteReadsGiveTheSamePlanes(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(3, 7, 4, 5);
    float[] x = new float[(int) s.numel()];
    for (int i = 0; i < x.length; i++) {
      x[i] = i * 0.5f - 3;
    }
    Path f = tmp.resolve("v.npy");
    try (var out = Files.newOutputStream(f)) {
      Npy.write(io.volpool.format.NpyArray.of(new long[] {3, 7, 4, 5}, x), out);
    }
    NpyVolumeInput in = new NpyVolumeInput(List.of(new NpyFileRef(f.toUri().toString(), "v.npy", Files.size(f))),
        new Configuration(), 1 << 16, new PhaseTimes());
    VolumeSource v = in.next(PageGate.UNLIMITED);
    int hw = s.h() * s.w();
    int stride = 4 * hw + 3; // window of 4 planes per channel, 3 spare floats between channels
    float[] viaFloats = new float[3 * stride];
    ByteBuffer direct = ByteBuffer.allocateDirect(3 * stride * 4).order(ByteOrder.LITTLE_ENDIAN);
    try (PlaneSource a = v.positionedPlanes()) {
      assertThat(a).as("a plain .npy is read by position").isNotNull();
      a.read(2, 5, FloatBuffer.wrap(viaFloats), 1, stride);
    }
    in.close();
    NpyVolumeInput again = new NpyVolumeInput(List.of(new NpyFileRef(f.toUri().toString(), "v.npy", Files.size(f))),
        new Configuration(), 1 << 16, new PhaseTimes());
    try (PlaneSource b = again.next(PageGate.UNLIMITED).positionedPlanes()) {
      b.read(2, 5, direct, 1, stride);
    }
    again.close();
    float[] viaBytes = new float[3 * stride];
    direct.asFloatBuffer().get(viaBytes);
    for (int c = 0; c < 3; c++) {
      for (int d = 2; d < 5; d++) {
        for (int e = 0; e < hw; e++) {
          float want = x[(c * 7 + d) * hw + e];
          int at = c * stride + 1 + (d - 2) * hw + e;
          assertThat(viaFloats[at]).as("float window c=%d d=%d e=%d", c, d, e).isEqualTo(want);
          assertThat(viaBytes[at]).as("byte window c=%d d=%d e=%d", c, d, e).isEqualTo(want);
        }
      }
    }
    assertThat(viaBytes[0]).as("nothing before the offset").isZero();
  }

  /**
   * A slab run's input over a local .npy into direct (pinned-like) windows: the source reads channels
   * concurrently, so each window is filled by several threads (halo copied, new planes read by
   * channel range). Every window of every slab holds exactly the volume's planes, for channel counts
   * that do and do not divide among the threads.
   */
  @Test
  void slabWindowsReadByChannelsOnSeveralThreadsHoldTheVolumesPlanes(@TempDir Path tmp) throws Exception {
    java.util.concurrent.ExecutorService reader = java.util.concurrent.Executors.newCachedThreadPool();
    try {
      for (int channels : new int[] {1, 3, 5, 32}) {
        VolumeShape s = new VolumeShape(channels, 13, 4, 6);
        float[] x = new float[(int) s.numel()];
        for (int i = 0; i < x.length; i++) {
          x[i] = i + 0.25f;
        }
        Path f = tmp.resolve("v" + channels + ".npy");
        try (var out = Files.newOutputStream(f)) {
          Npy.write(io.volpool.format.NpyArray.of(new long[] {channels, 13, 4, 6}, x), out);
        }
        io.volpool.op.SlabPlan plan = new io.volpool.op.SlabPlan(io.volpool.op.Pipeline.of(
            new io.volpool.ops.avgpool3d.AvgPool3dSpec(3, 2, 1, false, true)), s);
        for (int planes : new int[] {1, 2, 5}) {
          NpyVolumeInput in = new NpyVolumeInput(List.of(new NpyFileRef(f.toUri().toString(), f.getFileName().toString(),
              Files.size(f))), new Configuration(), 1 << 16, new PhaseTimes());
          int n = (int) io.volpool.backend.SlabInput.floats(plan, planes);
          ByteBuffer a = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.LITTLE_ENDIAN);
          ByteBuffer b = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.LITTLE_ENDIAN);
          try (PlaneSource src = in.next(PageGate.UNLIMITED).positionedPlanes()) {
            assertThat(src.concurrentChannels()).as("a local file is read by position from several threads").isTrue();
            io.volpool.backend.SlabInput input = new io.volpool.backend.SlabInput(plan, planes, src, new PhaseTimes(), reader,
                a.asFloatBuffer(), b.asFloatBuffer(), a, b);
            int od = plan.output().d();
            for (int o0 = 0; o0 < od; o0 += planes) {
              FloatBuffer w = input.next(o0);
              int[] r = plan.inputPlanes(o0, Math.min(od, o0 + planes));
              int hw = s.h() * s.w();
              int wd = r[1] - r[0];
              for (int c = 0; c < channels; c++) {
                for (int d = r[0]; d < r[1]; d++) {
                  for (int e = 0; e < hw; e++) {
                    float got = w.get((c * wd + d - r[0]) * hw + e);
                    float want = x[(c * 13 + d) * hw + e];
                    if (got != want) {
                      throw new AssertionError(channels + " channels, slabs of " + planes + ", output plane " + o0
                          + ": channel " + c + " plane " + d + " element " + e + " is " + got + ", expected " + want);
                    }
                  }
                }
              }
            }
            input.close();
          }
          in.close();
        }
      }
    } finally {
      reader.shutdownNow();
    }
  }

  /**
   * The GPU's way: each window holds only the planes the slab before did not read ({@code
   * newPlanesOnly}), packed {@code [C, planes, H, W]} from {@code firstNew()}, and the run keeps the
   * halo itself. Rebuilt as the device does it (the halo from the last window, the new planes
   * behind it), every window holds exactly the volume's planes: for pools whose windows overlap
   * (k3 s2), touch (k2 s2) and leave gaps (k2 s3), for fused (an upsampling stage, whose slabs often
   * read no new plane) and fused then avgpool, read by one thread and by several.
   */
  @Test
  void newPlanesOnlyWindowsWithAKeptHaloHoldTheVolumesPlanes(@TempDir Path tmp) throws Exception {
    java.util.concurrent.ExecutorService reader = java.util.concurrent.Executors.newCachedThreadPool();
    java.util.SplittableRandom r = new java.util.SplittableRandom(5);
    try {
      int d = 17;
      for (int channels : new int[] {1, 3, 32}) {
        VolumeShape s = new VolumeShape(channels, d, 4, 6);
        float[] x = new float[(int) s.numel()];
        for (int i = 0; i < x.length; i++) {
          x[i] = i + 0.25f;
        }
        Path f = tmp.resolve("n" + channels + ".npy");
        try (var out = Files.newOutputStream(f)) {
          Npy.write(io.volpool.format.NpyArray.of(new long[] {channels, d, 4, 6}, x), out);
        }
        var fused = io.volpool.testing.RandomData.fused(r, channels, 2, 3, 2, 1, 1, 2);
        List<io.volpool.op.Pipeline> pipelines = List.of(
            io.volpool.op.Pipeline.of(new io.volpool.ops.avgpool3d.AvgPool3dSpec(3, 2, 1, false, true)),
            io.volpool.op.Pipeline.of(new io.volpool.ops.avgpool3d.AvgPool3dSpec(3, 2, 0, true, true)),
            io.volpool.op.Pipeline.of(new io.volpool.ops.avgpool3d.AvgPool3dSpec(2, 2, 0, false, true)),
            io.volpool.op.Pipeline.of(new io.volpool.ops.avgpool3d.AvgPool3dSpec(2, 3, 0, false, true)),
            io.volpool.op.Pipeline.of(fused),
            io.volpool.op.Pipeline.of(fused, new io.volpool.ops.avgpool3d.AvgPool3dSpec(3, 2, 1, false, true)));
        for (io.volpool.op.Pipeline p : pipelines) {
          io.volpool.op.SlabPlan plan = new io.volpool.op.SlabPlan(p, s);
          for (int planes : new int[] {1, 2, 5}) {
            for (int threads : new int[] {1, 4}) {
              checkNewPlanesOnly(f, s, x, plan, planes, threads, reader, p.describe());
            }
          }
        }
      }
    } finally {
      reader.shutdownNow();
    }
  }

  private static void checkNewPlanesOnly(Path f, VolumeShape s, float[] x, io.volpool.op.SlabPlan plan, int planes,
      int threads, java.util.concurrent.ExecutorService reader, String what) throws Exception {
    NpyVolumeInput in = new NpyVolumeInput(List.of(new NpyFileRef(f.toUri().toString(), f.getFileName().toString(),
        Files.size(f))), new Configuration(), 1 << 16, new PhaseTimes());
    int n = (int) io.volpool.backend.SlabInput.newFloats(plan, planes);
    assertThat((long) n).as("new planes only never need more than the whole window")
        .isLessThanOrEqualTo(io.volpool.backend.SlabInput.floats(plan, planes));
    ByteBuffer a = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer b = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.LITTLE_ENDIAN);
    int hw = s.h() * s.w();
    int c = s.c();
    float[] held = new float[0];
    int heldLo = 0;
    int heldHi = 0;
    int read = 0;
    try (PlaneSource src = in.next(PageGate.UNLIMITED).positionedPlanes()) {
      io.volpool.backend.SlabInput input = io.volpool.backend.SlabInput.newPlanesOnly(plan, planes, src, new PhaseTimes(),
          reader, a.asFloatBuffer(), b.asFloatBuffer(), a, b, threads);
      int od = plan.output().d();
      for (int o0 = 0; o0 < od; o0 += planes) {
        FloatBuffer w = input.next(o0);
        int[] win = plan.inputPlanes(o0, Math.min(od, o0 + planes));
        int lo = win[0];
        int hi = win[1];
        int from = input.firstNew();
        assertThat(from).as("%s slabs of %d, output plane %d: the halo comes from the last window", what, planes, o0)
            .isBetween(lo, hi);
        if (from > lo) {
          assertThat(lo >= heldLo && from <= heldHi).as("%s: halo [%d, %d) inside the last window [%d, %d)", what, lo, from,
              heldLo, heldHi).isTrue();
        }
        float[] now = new float[c * (hi - lo) * hw];
        for (int ch = 0; ch < c; ch++) {
          for (int dd = lo; dd < hi; dd++) {
            for (int e = 0; e < hw; e++) {
              now[(ch * (hi - lo) + dd - lo) * hw + e] = dd < from ? held[(ch * (heldHi - heldLo) + dd - heldLo) * hw + e]
                  : w.get((ch * (hi - from) + dd - from) * hw + e);
            }
          }
        }
        for (int ch = 0; ch < c; ch++) {
          for (int dd = lo; dd < hi; dd++) {
            for (int e = 0; e < hw; e++) {
              float got = now[(ch * (hi - lo) + dd - lo) * hw + e];
              float want = x[(ch * s.d() + dd) * hw + e];
              if (got != want) {
                throw new AssertionError(what + ", " + c + " channels, slabs of " + planes + ", " + threads
                    + " threads, output plane " + o0 + ": channel " + ch + " plane " + dd + " element " + e + " is " + got
                    + ", expected " + want);
              }
            }
          }
        }
        read += hi - from;
        held = now;
        heldLo = lo;
        heldHi = hi;
      }
      input.close();
    }
    in.close();
    int first = plan.inputPlanes(0, Math.min(plan.output().d(), planes))[0];
    assertThat(read).as("%s slabs of %d: every plane the slabs use is read once, none twice", what, planes)
        .isLessThanOrEqualTo(s.d() - first);
  }

  /** Writes a C-order .npy of {@code descr} holding {@code data} (in the file's byte order). */
  static void writeNpy(Path p, String descr, long[] shape, byte[] data) throws java.io.IOException {
    StringBuilder dims = new StringBuilder();
    for (long d : shape) {
      dims.append(d).append(", ");
    }
    String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
    int pad = (64 - (10 + dict.length() + 1) % 64) % 64;
    String header = dict + " ".repeat(pad) + "\n";
    ByteBuffer b = ByteBuffer.allocate(10 + header.length()).order(ByteOrder.LITTLE_ENDIAN);
    b.put((byte) 0x93).put("NUMPY".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
    b.putShort((short) header.length()).put(header.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    try (var out = Files.newOutputStream(p)) {
      out.write(b.array());
      out.write(data);
    }
  }

  /**
   * Narrow, big-endian and rescaled values read by position are widened exactly as the value at their
   * index says, into float windows (the CPU) and direct byte windows (the GPU's pinned memory), over
   * plane ranges of more than one read chunk (1 MiB), with the stride and offset a slab asks for; the
   * stored bytes read are counted at their width.
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"<i2", "|u1", ">f4", "<f4", ">i2", "<u2"})
  void narrowTypesAreWidenedAndRescaledWhereTheyLie(String descr, @TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 12, 256, 320);
    io.volpool.format.ValueType type = io.volpool.format.ValueType.parse(descr);
    int size = type.itemSize();
    ByteBuffer raw = ByteBuffer.allocate((int) s.numel() * size).order(type.order());
    java.util.Random r = new java.util.Random(descr.hashCode());
    double[] want = new double[(int) s.numel()];
    for (int i = 0; i < want.length; i++) {
      switch (descr.substring(1)) {
        case "i2" -> {
          short v = (short) r.nextInt();
          raw.putShort(v);
          want[i] = v;
        }
        case "u2" -> {
          int v = r.nextInt(65536);
          raw.putShort((short) v);
          want[i] = v;
        }
        case "u1" -> {
          int v = r.nextInt(256);
          raw.put((byte) v);
          want[i] = v;
        }
        default -> {
          float v = (float) r.nextGaussian();
          raw.putFloat(v);
          want[i] = v;
        }
      }
    }
    Path f = tmp.resolve("v.npy");
    writeNpy(f, descr, new long[] {2, 12, 256, 320}, raw.array());
    io.volpool.format.Rescale rescale = descr.equals(">f4") ? io.volpool.format.Rescale.IDENTITY
        : new io.volpool.format.Rescale(0.25f, -7f);
    int hw = s.h() * s.w();
    int d0 = 1;
    int d1 = 11; // 10 planes: 1.6 MiB of int16, 3.1 MiB of float32 per channel
    int stride = (d1 - d0) * hw + 5;
    float[] viaFloats = new float[2 * stride];
    ByteBuffer direct = ByteBuffer.allocateDirect(2 * stride * 4).order(ByteOrder.LITTLE_ENDIAN);
    long[] counted = new long[2];
    for (int k = 0; k < 2; k++) {
      NpyVolumeInput in = new NpyVolumeInput(List.of(new NpyFileRef(f.toUri().toString(), "v.npy", Files.size(f))),
          rescale, new Configuration(), 1 << 16, new PhaseTimes());
      try (PlaneSource p = in.next(PageGate.UNLIMITED).positionedPlanes()) {
        assertThat(p).as("a C-order " + descr + " .npy is read by position").isNotNull();
        assertThat(p.concurrentChannels()).as("only plain float32 is read by several threads").isEqualTo(
            type.isFloat32() && rescale.isIdentity());
        if (k == 0) {
          p.read(d0, d1, FloatBuffer.wrap(viaFloats), 2, stride);
        } else {
          p.read(d0, d1, direct, 2, stride);
        }
        counted[k] = ((PositionedPlanes) p).storedBytesRead();
      }
      in.close();
    }
    float[] viaBytes = new float[2 * stride];
    direct.asFloatBuffer().get(viaBytes);
    for (int c = 0; c < 2; c++) {
      for (int i = 0; i < (d1 - d0) * hw; i++) {
        float expect = rescale.isIdentity() ? (float) want[(int) (c * s.plane() + (long) d0 * hw + i)]
            : (float) want[(int) (c * s.plane() + (long) d0 * hw + i)] * 0.25f - 7f;
        int at = c * stride + 2 + i;
        if (Float.floatToRawIntBits(viaFloats[at]) != Float.floatToRawIntBits(expect)
            || Float.floatToRawIntBits(viaBytes[at]) != Float.floatToRawIntBits(expect)) {
          throw new AssertionError(descr + " channel " + c + " element " + i + ": float window " + viaFloats[at]
              + ", byte window " + viaBytes[at] + ", want " + expect);
        }
      }
    }
    assertThat(counted).as("stored bytes read").containsExactly(2L * (d1 - d0) * hw * size, 2L * (d1 - d0) * hw * size);
  }
}
