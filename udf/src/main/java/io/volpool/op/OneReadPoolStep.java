package io.volpool.op;

import static io.volpool.op.GpuLaunch.args;
import static io.volpool.op.GpuLaunch.i32;
import static io.volpool.op.GpuLaunch.poolArgs;

import io.volpool.format.Dtype;
import io.volpool.format.ValueType;
import java.util.List;

/**
 * A launch of the one-read kernel 3, stride 2, padding 1 pools of {@code volpool.cu}
 * ({@code avgpool_k3s2p1}, {@code maxpool_k3s2p1}): float32 input, or, as the first step of a
 * batch of 8- or 16-bit volumes, their stored values read as they are ({@code avgpool_k3s2p1_i16},
 * ...), widened and rescaled in the kernel's loads. Immutable.
 *
 * @param family the float32 kernel's name; a stored type adds its suffix
 * @param extra the arguments after the window (avgpool3d's {@code count_include_pad})
 * @param stored the values the kernel reads: {@link Dtype#FLOAT32}, or a little-endian 8- or 16-bit dtype
 */
public record OneReadPoolStep(String family, int src, VolumeShape in, VolumeShape out, List<GpuLaunch.Arg> extra,
    Dtype stored) implements GpuStep {
  /** Input columns a lane of the float32 kernels loads (one 16-byte load); W must be a multiple. */
  public static final int FLOAT_COLUMNS = 4;
  /** Input columns a lane of the stored-value kernels loads; W must be a multiple. */
  public static final int STORED_COLUMNS = 8;

  public OneReadPoolStep {
    extra = List.copyOf(extra);
  }

  /** The float32 kernel of {@code family} from buffer {@code src}. */
  public static OneReadPoolStep of(String family, int src, VolumeShape in, VolumeShape out, List<GpuLaunch.Arg> extra) {
    return new OneReadPoolStep(family, src, in, out, extra, Dtype.FLOAT32);
  }

  /** Whether the one-read kernels take input of this shape (float32: 16-byte rows). */
  public static boolean takes(VolumeShape in) {
    return in.w() % FLOAT_COLUMNS == 0;
  }

  @Override
  public String kernel() {
    return stored == Dtype.FLOAT32 ? family : family + "_" + suffix(stored);
  }

  @Override
  public int dst() {
    return src + 1;
  }

  /** The kernel name's suffix for a stored dtype. */
  static String suffix(Dtype d) {
    switch (d) {
      case UINT8:
        return "u8";
      case INT8:
        return "i8";
      case UINT16:
        return "u16";
      case INT16:
        return "i16";
      case FLOAT16:
        return "f16";
      case BFLOAT16:
        return "bf16";
      default:
        throw new IllegalArgumentException("the one-read pools read 8- and 16-bit values, not " + d.numpyName());
    }
  }

  /**
   * The same pool reading {@code t}'s stored values: little-endian 8- and 16-bit types on rows of a
   * multiple of {@link #STORED_COLUMNS} (one 8- or 16-byte load per lane); null otherwise.
   */
  @Override
  public GpuStep reading(ValueType t) {
    if (t.isFloat32()) {
      return this;
    }
    if (t.bigEndian() || t.itemSize() > 2 || in.w() % STORED_COLUMNS != 0 || src != 0) {
      return null;
    }
    return new OneReadPoolStep(family, src, in, out, extra, t.dtype());
  }

  @Override
  public GpuLaunch launch(int n, Slab w) {
    int columns = stored == Dtype.FLOAT32 ? FLOAT_COLUMNS : STORED_COLUMNS;
    List<GpuLaunch.Arg> a = stored == Dtype.FLOAT32 ? args(poolArgs(n, in, out, w), extra)
        : args(poolArgs(n, in, out, w), extra, i32(in.c()), GpuLaunch.rescale());
    // blocks of (32, 4) threads, each covering 32 * columns / 2 outputs of 8 rows, marching along D
    long total = (long) n * in.c() * GpuLaunch.ceil(out.h(), 8) * GpuLaunch.ceil(out.w(), 32 * columns / 2);
    return GpuLaunch.grid(a, (int) Math.min(total, Integer.MAX_VALUE), 1, 1, 32, 4, 0);
  }
}
