package io.volpool.io;

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
}
