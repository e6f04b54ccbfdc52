package io.volpool.op;

import java.util.List;

/**
 * The arguments and grid of one kernel launch, in the order the kernel declares them. The GPU
 * backend turns {@link Arg.Src} and {@link Arg.Dst} into the step's device buffers, uploads each
 * {@link Arg.Table} once per plan (by identity of its array) and passes the rest by value. A
 * grid-stride launch ({@code work > 0}) leaves {@code gridX} to the backend: enough blocks of
 * {@code blockX} threads for {@code work} elements, capped by what the device keeps resident.
 */
public record GpuLaunch(List<Arg> args, long work, int gridX, int gridY, int gridZ, int blockX, int blockY,
    int sharedBytes) {
  public GpuLaunch {
    args = List.copyOf(args);
  }

  /** One thread per element of {@code work}, blocks of {@code threads}, the kernel looping over the rest. */
  public static GpuLaunch gridStride(List<Arg> args, long work, int threads) {
    return new GpuLaunch(args, work, 0, 1, 1, threads, 1, 0);
  }

  /** A fixed grid. */
  public static GpuLaunch grid(List<Arg> args, int gx, int gy, int gz, int bx, int by, int sharedBytes) {
    return new GpuLaunch(args, 0, gx, gy, gz, bx, by, sharedBytes);
  }

  /** The arguments in order: each part is an {@link Arg} or a list of them. */
  public static List<Arg> args(Object... parts) {
    java.util.ArrayList<Arg> out = new java.util.ArrayList<>();
    for (Object o : parts) {
      if (o instanceof List<?> l) {
        l.forEach(a -> out.add(arg(a)));
      } else {
        out.add(arg(o));
      }
    }
    return out;
  }

  /** One kernel argument. */
  public sealed interface Arg permits Arg.Src, Arg.Dst, Arg.I32, Arg.I64, Arg.Struct, Arg.Table, Arg.Rescale {
    /** The step's input buffer (a {@code const float*}, or the stored values' type for a step {@link GpuStep#reading} them). */
    record Src() implements Arg {}

    /** The batch's per-volume rescale pairs {@code (slope, intercept)}, a {@code const float2*}. */
    record Rescale() implements Arg {}

    /** The step's output buffer (a {@code float*}). */
    record Dst() implements Arg {}

    /** An {@code int}. */
    record I32(int value) implements Arg {}

    /** A {@code long long}. */
    record I64(long value) implements Arg {}

    /** A struct of floats passed by value (e.g. a small weight table in constant parameter space). */
    record Struct(float[] values) implements Arg {}

    /** A read-only device array of {@code int[]} or {@code float[]}, uploaded once and passed as a pointer. */
    record Table(Object values) implements Arg {
      public Table {
        if (!(values instanceof int[]) && !(values instanceof float[])) {
          throw new IllegalArgumentException("a kernel table holds int[] or float[], got " + values.getClass());
        }
      }
    }
  }

  /** The step's input buffer (named apart from {@link GpuStep#src()}, the buffer's index). */
  public static Arg inputBuffer() {
    return new Arg.Src();
  }

  /** The step's output buffer. */
  public static Arg outputBuffer() {
    return new Arg.Dst();
  }

  /** The batch's per-volume rescale pairs. */
  public static Arg rescale() {
    return new Arg.Rescale();
  }

  public static Arg i32(int v) {
    return new Arg.I32(v);
  }

  public static Arg i64(long v) {
    return new Arg.I64(v);
  }

  private static Arg arg(Object o) {
    if (o instanceof Arg a) {
      return a;
    }
    throw new IllegalArgumentException("a kernel argument must be a GpuLaunch.Arg (i32(...), inputBuffer(), ...), got "
        + (o == null ? "null" : o + " (" + o.getClass().getSimpleName() + ")"));
  }

  /** The window arguments every kernel takes after its shapes: inD0, inDn, outD0, outDn. */
  public static List<Arg> window(Slab w) {
    return List.of(i32(w.inD0()), i32(w.inDn()), i32(w.outD0()), i32(w.outDn()));
  }

  /**
   * The arguments every pool kernel starts with: input and output buffers, {@code nc} (volumes x
   * channels, 64-bit), the input's and the output's D, H, W, then the window.
   */
  public static List<Arg> poolArgs(int n, VolumeShape in, VolumeShape out, Slab w) {
    return args(inputBuffer(), outputBuffer(), i64((long) n * in.c()), i32(in.d()), i32(in.h()), i32(in.w()),
        i32(out.d()), i32(out.h()), i32(out.w()), window(w));
  }

  /** A grid-stride pool launch: one thread per output element of the window. */
  public static GpuLaunch perOutput(List<Arg> args, int n, VolumeShape out, Slab w) {
    return gridStride(args, (long) n * out.c() * w.outDn() * out.h() * (long) out.w(), 256);
  }

  public static int ceil(int a, int b) {
    return (a + b - 1) / b;
  }
}
