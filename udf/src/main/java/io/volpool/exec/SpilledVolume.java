package io.volpool.exec;

import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.VolumeSink;
import io.volpool.backend.Backend;
import io.volpool.backend.SlabRun;
import io.volpool.format.Dtype;
import io.volpool.format.Narrow;
import io.volpool.io.VolumeSource;
import io.volpool.op.Pipeline;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.List;

/**
 * A volume stored in one row (or one .npy file) that is larger than the memory budget lets one
 * batch hold, run alone in slabs along D. A volume stored plainly (an uncompressed PLAIN Parquet
 * value, a C-order .npy of any dtype) is read by position, slab by slab; any other is first streamed
 * into the task's mapped "in" scratch file (readers write straight into it, and the page cache, not
 * the heap, holds it). The output planes go into the task's mapped "out" scratch file, which the
 * writer reads as the volume's output. Heap use is one slab's windows; the scratch files are the
 * caller's, reused volume after volume ({@link ScratchMap}).
 */
final class SpilledVolume {
  private SpilledVolume() {}

  /**
   * Runs {@code item} through {@code pipeline} on {@code backend}'s {@code device} in slabs of
   * {@code planes} output planes (as {@link Backend#plan} chose); call holding no batch. The
   * returned output lies in {@code out} and is valid until {@code out} or {@code in} is next used.
   * {@code planesDone} is told the output planes done so far after each slab (progress).
   */
  static BatchRunner.Finished run(VolumeSource item, Pipeline pipeline, Backend backend, int device, int planes, int gap,
      TaskState task, ScratchMap in, ScratchMap out, java.util.function.LongConsumer planesDone) {
    PhaseTimes times = task.times();
    VolumeShape inShape = item.shape();
    VolumeShape outShape = pipeline.outputShape(inShape);
    if (gap + outShape.bytes() > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("the output " + outShape + " of this volume is more than one Parquet value or one"
          + " output buffer holds (2 GiB); write it across rows with " + io.volpool.conf.VolpoolOptions.OUTPUT_FORMAT.key()
          + "=parquet and " + io.volpool.conf.VolpoolOptions.OUTPUT_LAYOUT.key() + "=rows, which streams it out row by row"
          + " as its slabs finish (and spreads a C-order .npy volume larger than a task over several tasks); as .npy to a"
          + " local or shared filesystem or HDFS, a C-order .npy is written in ranges when it is spread: "
          + io.volpool.conf.VolpoolOptions.SPREAD_VOLUMES.key() + "=true (the default) and a task size"
          + " (spark.sql.files.maxPartitionBytes) below its stored bytes");
    }
    Dtype dtype = pipeline.output();
    long outBytes = pipeline.outputBytes(outShape);
    ByteBuffer outMap;
    if (pipeline.stages().isEmpty()) {
      // copied as float32, then narrowed in place
      outMap = out.region(gap + outShape.bytes());
      long r0 = System.nanoTime();
      item.copyTo(new MappedSink(outMap, gap));
      times.add(io.volpool.backend.Phase.READ, System.nanoTime() - r0);
      long n0 = System.nanoTime();
      Narrow.inPlace(outMap, gap, outShape.numel(), dtype);
      times.add(io.volpool.backend.Phase.KERNELS, System.nanoTime() - n0);
      outMap = outMap.slice(0, (int) (gap + outBytes));
    } else {
      outMap = out.region(gap + outBytes);
      SlabPlan plan = new SlabPlan(pipeline, inShape);
      ByteBuffer dst = outMap.duplicate().order(ByteOrder.LITTLE_ENDIAN);
      int ohw = outShape.h() * outShape.w();
      int size = dtype.itemSize();
      try (PlaneSource src = planes(item, times, in); SlabRun run = backend.startSlabs(plan, planes, src, (o0, o1, y) -> {
        for (int c = 0; c < outShape.c(); c++) {
          // narrowed here when the output dtype is narrow (slab runs hand over float32 planes)
          Narrow.put(y, c * (o1 - o0) * ohw, dst, (int) (gap + (c * outShape.plane() + (long) o0 * ohw) * size),
              (o1 - o0) * ohw, dtype);
        }
        planesDone.accept(o1); // slabs come in order from plane 0
      }, times, device)) {
        while (run.step()) {
          // each step writes one slab's output planes into the mapped output
        }
      }
    }
    return new BatchRunner.Finished(List.of(item), outShape, dtype, outMap.clear(), new long[] {gap}, task);
  }

  /**
   * The planes of {@code item}: read where they lie when it is stored plainly (an uncompressed PLAIN
   * Parquet value, a C-order {@code <f4} .npy), else from a copy streamed into {@code scratch}.
   */
  static PlaneSource planes(VolumeSource item, PhaseTimes times, ScratchMap scratch) {
    PlaneSource source = item.positionedPlanes();
    if (source != null) {
      return source;
    }
    VolumeShape in = item.shape();
    ByteBuffer inMap = scratch.region(in.bytes());
    long r0 = System.nanoTime();
    item.copyTo(new MappedSink(inMap, 0));
    times.add(io.volpool.backend.Phase.READ, System.nanoTime() - r0);
    return new MappedSource(item.record(), in, inMap.asFloatBuffer());
  }

  /** Writes a volume's bytes into a mapped file from {@code at} on; readers fill its windows in place. */
  private static final class MappedSink implements VolumeSink {
    private final ByteBuffer buf;
    private final int at;
    private long pos;

    MappedSink(ByteBuffer buf, int at) {
      this.buf = buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
      this.at = at;
    }

    @Override
    public void put(ByteBuffer src) {
      int n = src.remaining();
      buf.put((int) (at + pos), src, src.position(), n);
      src.position(src.limit());
      pos += n;
    }

    @Override
    public void putFloat(float v) {
      buf.putFloat((int) (at + pos), v);
      pos += 4;
    }

    @Override
    public ByteBuffer window(int max) {
      return buf.slice((int) (at + pos), (int) Math.min(max, buf.capacity() - at - pos)).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public void advance(int n) {
      pos += n;
    }

    @Override
    public long position() {
      return pos;
    }
  }

  /** Planes of a volume in a mapped scratch file, read by position. */
  private record MappedSource(String record, VolumeShape shape, FloatBuffer src) implements PlaneSource {
    @Override
    public void read(int d0, int d1, FloatBuffer dst, int at, int channelStride) {
      int hw = shape.h() * shape.w();
      for (int c = 0; c < shape.c(); c++) {
        dst.put(c * channelStride + at, src, (int) (c * shape.plane() + (long) d0 * hw), (d1 - d0) * hw);
      }
    }

    /** Nothing to give back: the scratch file is the task's, reused by its next spilled volume. */
    @Override
    public void close() {}
  }
}
