package io.volpool.spark;

import io.volpool.format.Npy;
import io.volpool.format.NpyArray;
import io.volpool.format.TensorFormatException;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * An .npy file read as volumes: one volume {@code [C,D,H,W]} or a batch {@code [N,C,D,H,W]}. The
 * one place where the rules for .npy inputs live; every broken rule is a {@link BadRecordException}
 * naming the file.
 *
 * @param path the file, as the user named it
 * @param array its data, little-endian float32, C order
 * @param leading the leading dimensions kept in the output: none, or {@code [N]}
 * @param count how many volumes the file holds
 * @param shape the shape of each volume
 */
public record NpyVolumes(String path, NpyArray array, long[] leading, int count, VolumeShape shape) {

  /** Parses {@code content} and checks that it holds volumes. */
  public static NpyVolumes read(String path, byte[] content) {
    NpyArray a;
    try {
      a = Npy.read(content, path);
    } catch (TensorFormatException e) {
      throw new BadRecordException(path, e.getMessage(), e);
    }
    long[] s = a.shape();
    if (s.length != 4 && s.length != 5) {
      throw new BadRecordException(path, "an .npy input must hold one volume [C, D, H, W] or a batch [N, C, D, H, W],"
          + " got shape " + Arrays.toString(s));
    }
    int o = s.length - 4;
    for (int i = o; i < s.length; i++) {
      if (s[i] <= 0 || s[i] > Integer.MAX_VALUE) {
        throw new BadRecordException(path, "volume dimensions must be positive, got shape " + Arrays.toString(s));
      }
    }
    if (o == 1 && s[0] == 0) {
      throw new BadRecordException(path, "holds no volumes: shape " + Arrays.toString(s));
    }
    long[] leading = o == 1 ? new long[] {s[0]} : new long[0];
    int count = o == 1 ? Math.toIntExact(s[0]) : 1;
    return new NpyVolumes(path, a, leading, count,
        new VolumeShape((int) s[o], (int) s[o + 1], (int) s[o + 2], (int) s[o + 3]));
  }

  /** Volume {@code i}'s bytes (a view, little-endian). */
  public ByteBuffer volume(int i) {
    int vb = (int) shape.bytes();
    return array.data().slice(i * vb, vb);
  }

  /** The record name of volume {@code i}: the path, with {@code [i]} for batch files. */
  public String record(int i) {
    return leading.length == 0 ? path : path + "[" + i + "]";
  }
}
