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
}
