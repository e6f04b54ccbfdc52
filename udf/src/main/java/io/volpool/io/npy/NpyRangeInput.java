package io.volpool.io.npy;

import io.volpool.backend.PhaseTimes;
import io.volpool.backend.PlaneSource;
import io.volpool.format.Rescale;
import io.volpool.io.CorruptInputException;
import io.volpool.io.PageGate;
import io.volpool.io.PositionedPlanes;
import io.volpool.io.SlabbedInput;
import io.volpool.io.VolumeSource;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;

/**
 * Reads the {@link NpyRange}s of a task: each opens its file (the ranges of one file in a row share
 * it), checks that the header still says what the driver planned, and reads its planes by position,
 * widening narrow types as they are read. Nothing is held in memory but a read chunk; the stored
 * bytes counted are those read, so planes two ranges share are counted by both.
 */
public final class NpyRangeInput implements SlabbedInput<NpyRange> {
  private final Rescale rescale;
  private final Configuration conf;
  private final int maxHeaderBytes;
  private final PhaseTimes times;
  private final AtomicLong volumes = new AtomicLong();
  private final AtomicLong stored = new AtomicLong();
  private NpyVolumeInput file;
  private NpyFileRef fileRef;
  private VolumeSource cur;
  /** The index in its file of {@link #cur}. */
  private int curIndex = -1;
  private NpyRange curRange;

  public NpyRangeInput(Rescale rescale, Configuration conf, int maxHeaderBytes, PhaseTimes times) {
    this.rescale = rescale;
    this.conf = conf;
    this.maxHeaderBytes = maxHeaderBytes;
    this.times = times;
  }

  @Override
  public VolumeSource first(NpyRange v) {
    if (file == null || !v.file().equals(fileRef) || cur == null || curIndex > v.index()) {
      closeFile();
      unchanged(v.file());
      file = new NpyVolumeInput(List.of(v.file()), rescale, conf, maxHeaderBytes, times);
      fileRef = v.file();
      cur = null;
      curIndex = -1;
    }
    while (cur == null || curIndex < v.index()) {
      VolumeSource s = file.next(PageGate.UNLIMITED);
      if (s == null) {
        throw new CorruptInputException(v.file().path() + ": volume " + v.index() + " planned by the driver is not in"
            + " the file; the input changed while the job ran");
      }
      cur = s;
      curIndex++;
    }
    if (!cur.shape().equals(v.shape())) {
      throw new CorruptInputException(v.record() + ": the file's volumes are " + cur.shape() + " where the driver found "
          + v.shape() + "; the input changed while the job ran");
    }
    curRange = v;
    return cur;
  }

  /**
   * A read chunk of the file's source (1 MiB), and for a narrow type the chunk's widened values (up to
   * 4 MiB, for uint8): the planes go from the file into the slab's windows.
   */
  @Override
  public long heldBytes(NpyRange v) {
    return 5L << 20;
  }

  @Override
  public PlaneSource open(NpyRange v) {
    if (curRange != v) {
      first(v);
    }
    PlaneSource p = cur.positionedPlanes();
    if (p == null) {
      throw new CorruptInputException(v.record() + ": the file is no longer in C order; the input changed while the job"
          + " ran");
    }
    return p;
  }

  @Override
  public void finish(PlaneSource src) {
    // the ranges of one file run in many tasks, each opening it: one that read a file replaced or rewritten under it
    // would publish a mix of two files
    unchanged(curRange.file());
    stored.addAndGet(((PositionedPlanes) src).storedBytesRead());
    if (curRange.counts()) {
      volumes.incrementAndGet();
    }
  }

  /** Fails when {@code f} is not the file the driver planned: its size or modification time differs, or it is gone. */
  private void unchanged(NpyFileRef f) {
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(f.path());
    org.apache.hadoop.fs.FileStatus st;
    try {
      st = p.getFileSystem(conf).getFileStatus(p);
    } catch (java.io.FileNotFoundException e) {
      throw new CorruptInputException(f.path() + ": the input file changed while the job read it: it is gone; rerun once"
          + " it is complete");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("reading the status of " + f.path() + ": " + e.getMessage(), e);
    }
    if (st.getLen() != f.length() || (f.modified() >= 0 && st.getModificationTime() != f.modified())) {
      throw new CorruptInputException(f.path() + ": the input file changed while the job read it (planned with "
          + f.length() + " bytes, modified " + java.time.Instant.ofEpochMilli(f.modified()) + "; now " + st.getLen()
          + " bytes, modified " + java.time.Instant.ofEpochMilli(st.getModificationTime()) + "); rerun once it is"
          + " complete");
    }
  }

  @Override
  public long unitsRead() {
    return volumes.get();
  }

  @Override
  public long storedBytesRead() {
    return stored.get();
  }

  private void closeFile() {
    if (file != null) {
      file.close();
      file = null;
      fileRef = null;
      cur = null;
      curIndex = -1;
    }
  }

  @Override
  public void close() {
    closeFile();
  }
}
