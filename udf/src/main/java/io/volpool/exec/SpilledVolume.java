package io.volpool.exec;

import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.backend.VolumeSink;
import io.volpool.backend.Backend;
import io.volpool.backend.SlabRun;
import io.volpool.io.VolumeSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.Pipeline;
import io.volpool.op.SlabPlan;
import io.volpool.op.VolumeShape;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * A volume stored in one row (or one .npy file) that is larger than the memory budget lets one
 * batch hold, run alone in slabs along D. A volume stored plainly (an uncompressed PLAIN Parquet
 * value, a C-order {@code <f4} .npy) is read by position, slab by slab; any other is first streamed
 * into a file in the executor's local directory (mapped, so readers write straight into it and the
 * page cache, not the heap, holds it). The output planes go into a mapped file that the writer reads
 * as the volume's output. Heap use is one slab's windows; files are deleted on close.
 */
final class SpilledVolume implements AutoCloseable {
  private final File inFile;
  private final File outFile;
  private final MappedByteBuffer outMap;
  private final BatchRunner.Finished finished;

  private SpilledVolume(File inFile, File outFile, MappedByteBuffer outMap, BatchRunner.Finished finished) {
    this.inFile = inFile;
    this.outFile = outFile;
    this.outMap = outMap;
    this.finished = finished;
  }

  BatchRunner.Finished finished() {
    return finished;
  }

  /**
   * Runs {@code item} through {@code pipeline} on {@code backend}'s {@code device} in slabs of
   * {@code planes} output planes (as {@link Backend#plan} chose); call holding no batch.
   */
  static SpilledVolume run(VolumeSource item, Pipeline pipeline, Backend backend, int device, int planes, int gap,
      TaskState task, ScratchFiles scratch) {
    PhaseTimes times = task.times();
    VolumeShape in = item.shape();
    VolumeShape out = pipeline.outputShape(in);
    if (gap + out.bytes() > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("the output " + out + " of this volume is more than one Parquet value or one"
          + " output buffer holds (2 GiB); write it across rows with " + io.volpool.conf.VolpoolOptions.OUTPUT_LAYOUT.key()
          + "=rows (Parquet output), which streams it out row by row as its slabs finish");
    }
    File inFile = null;
    File outFile = null;
    MappedByteBuffer outMap = null;
    try {
      outFile = scratch(scratch, "out");
      outMap = map(outFile, gap + out.bytes());
      if (pipeline.stages().isEmpty()) {
        long r0 = System.nanoTime();
        item.copyTo(new MappedSink(outMap, gap));
        times.add(io.volpool.backend.Phase.READ, System.nanoTime() - r0);
      } else {
        SlabPlan plan = new SlabPlan(pipeline, in);
        File[] spilled = new File[1];
        PlaneSource source;
        try {
          source = planes(item, times, scratch, spilled);
        } finally {
          inFile = spilled[0];
        }
        FloatBuffer dst = outMap.duplicate().order(ByteOrder.LITTLE_ENDIAN).position(gap).slice()
            .order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        int ohw = out.h() * out.w();
        try (PlaneSource src = source; SlabRun run = backend.startSlabs(plan, planes, src, (o0, o1, y) -> {
          for (int c = 0; c < out.c(); c++) {
            dst.put((int) (c * out.plane() + (long) o0 * ohw), y, c * (o1 - o0) * ohw, (o1 - o0) * ohw);
          }
        }, times, device)) {
          while (run.step()) {
            // each step writes one slab's output planes into the mapped output
          }
        }
      }
      ByteBuffer output = outMap.duplicate().order(ByteOrder.LITTLE_ENDIAN).clear();
      output.limit((int) (gap + out.bytes()));
      return new SpilledVolume(inFile, outFile, outMap,
          new BatchRunner.Finished(List.of(item), out, output, new long[] {gap}, task));
    } catch (RuntimeException | Error e) {
      Mapped.release(outMap);
      delete(inFile);
      delete(outFile);
      throw e;
    }
  }

  /**
   * The planes of {@code item}: read where they lie when it is stored plainly (an uncompressed PLAIN
   * Parquet value, a C-order {@code <f4} .npy), else from a copy streamed into a mapped scratch file,
   * which {@code spilled[0]} names for the caller to delete.
   */
  static PlaneSource planes(VolumeSource item, PhaseTimes times, ScratchFiles scratch, File[] spilled) {
    PlaneSource source = item.positionedPlanes();
    if (source != null) {
      return source;
    }
    VolumeShape in = item.shape();
    spilled[0] = scratch(scratch, "in");
    MappedByteBuffer inMap = map(spilled[0], in.bytes());
    long r0 = System.nanoTime();
    item.copyTo(new MappedSink(inMap, 0));
    times.add(io.volpool.backend.Phase.READ, System.nanoTime() - r0);
    return new MappedSource(item.record(), in, inMap, inMap.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer());
  }

  /** A file for spilled bytes from {@code scratch} (the executor's local directories under Spark). */
  private static File scratch(ScratchFiles scratch, String what) {
    try {
      return scratch.create(what);
    } catch (IOException e) {
      throw new UncheckedIOException("creating a spill file for a volume larger than the memory budget: " + e.getMessage(), e);
    }
  }

  private static MappedByteBuffer map(File f, long bytes) {
    try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      return ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes);
    } catch (IOException e) {
      throw new UncheckedIOException("mapping " + (bytes >> 20) + " MiB of spill file " + f + " (is the executor's local"
          + " directory, spark.local.dir, on a disk with room?): " + e.getMessage(), e);
    }
  }

  static void delete(File f) {
    if (f != null) {
      try {
        Files.deleteIfExists(f.toPath());
      } catch (IOException e) {
        // best effort: Spark removes its local directories when the executor exits
      }
    }
  }

  /** Deletes the spill files (the mappings go with their buffers). */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    // the writer is done with the output (it is valid until the runner's next call): unmap, then delete
    Mapped.release(outMap);
    delete(inFile);
    delete(outFile);
  }

  private boolean closed;

  /** Writes a volume's bytes into a mapped file from {@code at} on; readers fill its windows in place. */
  private static final class MappedSink implements VolumeSink {
    private final ByteBuffer buf;
    private final int at;
    private long pos;

    MappedSink(MappedByteBuffer buf, int at) {
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

  /** Planes of a volume in a mapped file, read by position. */
  private record MappedSource(String record, VolumeShape shape, MappedByteBuffer map, FloatBuffer src)
      implements PlaneSource {
    @Override
    public void read(int d0, int d1, FloatBuffer dst, int at, int channelStride) {
      int hw = shape.h() * shape.w();
      for (int c = 0; c < shape.c(); c++) {
        dst.put(c * channelStride + at, src, (int) (c * shape.plane() + (long) d0 * hw), (d1 - d0) * hw);
      }
    }

    /** Unmaps the spilled input: every slab has read its planes. */
    @Override
    public void close() {
      Mapped.release(map);
    }
  }
}
