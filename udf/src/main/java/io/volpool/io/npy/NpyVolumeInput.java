package io.volpool.io.npy;

import io.volpool.io.BadRecordException;
import io.volpool.io.ByteSource;
import io.volpool.io.PageGate;
import io.volpool.io.PositionedPlanes;
import io.volpool.io.VolumeInput;
import io.volpool.io.VolumeSource;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.VolumeSink;
import io.volpool.format.Rescale;
import io.volpool.format.ValueType;
import io.volpool.backend.WideningSink;
import io.volpool.format.Npy;
import io.volpool.format.NpyHeader;
import io.volpool.format.TensorFormatException;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * The volumes of a task's .npy files: each file holds one volume {@code [C,D,H,W]} or a batch
 * {@code [N,C,D,H,W]}. Only the header is parsed on the heap; {@code <f4} C-order data streams from
 * the file into the batch buffer, every other dtype and byte order is widened to float32 on the way
 * ({@link WideningSink}), and a Fortran-ordered file (which must be reordered as a whole) is read into
 * page memory taken from the gate. The one place where the rules for .npy inputs live; every broken
 * rule is a {@link BadRecordException} naming the file.
 */
public final class NpyVolumeInput implements VolumeInput {
  private final List<NpyFileRef> files;
  private final Rescale rescale;
  private final Configuration conf;
  private final int maxHeaderBytes;
  private final PhaseTimes times;
  private int nextFile;
  private OpenFile cur;
  private long volumes;

  /** One open file: its header, the volumes in it and how their bytes are read. */
  public static final class OpenFile {
    private final NpyFileRef ref;
    private final ByteSource src;
    private final NpyHeader header;
    private final long[] leading;
    private final int count;
    private final VolumeShape shape;
    private ByteBuffer whole;
    private long lease;
    private PageGate leaseGate;
    private int next;

    OpenFile(NpyFileRef ref, ByteSource src, NpyHeader header, long[] leading, int count, VolumeShape shape) {
      this.ref = ref;
      this.src = src;
      this.header = header;
      this.leading = leading;
      this.count = count;
      this.shape = shape;
    }

    public NpyFileRef ref() {
      return ref;
    }

    /** The leading dimensions kept in the output: none, or {@code [N]}. */
    public long[] leading() {
      return leading.clone();
    }

    /** How many volumes the file holds. */
    public int count() {
      return count;
    }

    public VolumeShape shape() {
      return shape;
    }

    /** The record name of volume {@code i}: the path, with {@code [i]} for batch files. */
    public String record(int i) {
      return leading.length == 0 ? ref.path() : ref.path() + "[" + i + "]";
    }

    void release() {
      whole = null;
      if (lease > 0) {
        leaseGate.release(lease);
        lease = 0;
      }
      try {
        src.close();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** Volume {@code index} of an open file. */
  public static final class FileVolume implements VolumeSource {
    private final OpenFile file;
    private final int index;
    private final PhaseTimes times;
    private final Rescale rescale;

    FileVolume(OpenFile file, int index, PhaseTimes times, Rescale rescale) {
      this.file = file;
      this.index = index;
      this.times = times;
      this.rescale = rescale;
    }

    public OpenFile file() {
      return file;
    }

    public int index() {
      return index;
    }

    @Override
    public FilePlace filePlace() {
      return new FilePlace(file.ref.path(), file.ref.relative(), file.leading(), file.count(), index);
    }

    @Override
    public String outputId() {
      String rel = file.ref().relative();
      return file.leading().length == 0 ? rel : rel + "[" + index + "]";
    }

    @Override
    public String record() {
      return file.record(index);
    }

    @Override
    public String filePath() {
      return file.ref.path();
    }

    @Override
    public VolumeShape shape() {
      return file.shape;
    }

    @Override
    public long storedBytes() {
      return file.shape.numel() * file.header.itemSize();
    }

    @Override
    public io.volpool.backend.PlaneSource positionedPlanes() {
      if (file.whole != null || (file.header.fortranOrder() && !file.header.isPlainF32())) {
        return null;
      }
      // any C-order dtype: read where it lies, narrow types widened (and rescaled) as their planes are read
      return new PositionedPlanes(file.src, file.header.dataOffset() + index * storedBytes(), file.shape, record(),
          file.header.type(), rescale);
    }

    @Override
    public ValueType valueType() {
      // a Fortran-order file was loaded whole and transposed to float32
      return file.whole != null ? ValueType.FLOAT32 : file.header.type();
    }

    @Override
    public Rescale rescale() {
      return rescale;
    }

    @Override
    public void copyStoredTo(VolumeSink dst) {
      if (file.whole != null) {
        VolumeSource.super.copyStoredTo(dst);
        return;
      }
      long t0 = System.nanoTime();
      NpyHeader h = file.header;
      long raw = file.shape.numel() * h.itemSize();
      try {
        file.src.seek(h.dataOffset() + index * raw);
        dst.fill(raw, file.src::readFully, file.src.chunk());
      } catch (IOException e) {
        throw new UncheckedIOException("reading " + file.ref.path() + ": " + e.getMessage(), e);
      }
      times.add(Phase.READ, System.nanoTime() - t0);
    }

    @Override
    public void copyTo(VolumeSink dst) {
      long t0 = System.nanoTime();
      long vb = file.shape.bytes();
      try {
        if (file.whole != null) {
          WideningSink.of(dst, ValueType.FLOAT32, rescale).put(file.whole.slice((int) (index * vb), (int) vb));
          times.add(Phase.DECODE, System.nanoTime() - t0);
          return;
        }
        NpyHeader h = file.header;
        long raw = vb / 4 * h.itemSize();
        file.src.seek(h.dataOffset() + index * raw);
        if (h.isPlainF32() && rescale.isIdentity()) {
          dst.fill(vb, file.src::readFully, file.src.chunk());
          times.add(Phase.READ, System.nanoTime() - t0);
          return;
        }
        // other dtypes and byte orders: widened on the way into the batch
        dst = WideningSink.of(dst, h.type(), rescale);
        dst.fill(raw, file.src::readFully, file.src.chunk());
        times.add(Phase.DECODE, System.nanoTime() - t0);
      } catch (IOException e) {
        throw new UncheckedIOException("reading " + file.ref.path() + ": " + e.getMessage(), e);
      }
    }
  }

  public NpyVolumeInput(List<NpyFileRef> files, Configuration conf, int maxHeaderBytes, PhaseTimes times) {
    this(files, Rescale.IDENTITY, conf, maxHeaderBytes, times);
  }

  /** As above, every value rescaled by {@code rescale}. */
  public NpyVolumeInput(List<NpyFileRef> files, Rescale rescale, Configuration conf, int maxHeaderBytes, PhaseTimes times) {
    this.files = files;
    this.rescale = rescale;
    this.conf = conf;
    this.maxHeaderBytes = maxHeaderBytes;
    this.times = times;
  }

  @Override
  public VolumeSource next(PageGate gate) {
    while (cur == null || cur.next >= cur.count) {
      if (cur != null) {
        cur.release();
        cur = null;
      }
      if (nextFile >= files.size()) {
        return null;
      }
      cur = open(files.get(nextFile++));
    }
    if (cur.next == 0 && cur.whole == null && !cur.header.isPlainF32() && cur.header.fortranOrder()) {
      try {
        loadWhole(cur, gate);
      } catch (BadRecordException e) {
        // the file is stepped over: the next call opens the next file
        cur.release();
        cur = null;
        throw e;
      }
    }
    volumes++;
    return new FileVolume(cur, cur.next++, times, rescale);
  }

  @Override
  public boolean stepsOverBadRecords() {
    return true;
  }

  private OpenFile open(NpyFileRef ref) {
    long t0 = System.nanoTime();
    ByteSource src = null;
    try {
      src = ByteSource.open(new Path(ref.path()), conf);
      long len = src.length();
      byte[] prefix = new byte[NpyHeader.prefixBytes(len, maxHeaderBytes)];
      src.readFully(prefix, 0, prefix.length);
      NpyHeader h;
      try {
        h = NpyHeader.parse(prefix, len, ref.path(), maxHeaderBytes);
      } catch (TensorFormatException e) {
        throw new BadRecordException(ref.path(), e.getMessage(), e);
      }
      long[] s = h.shape();
      if (s.length != 4 && s.length != 5) {
        throw new BadRecordException(ref.path(), "an .npy input must hold one volume [C, D, H, W] or a batch"
            + " [N, C, D, H, W], got shape " + Arrays.toString(s));
      }
      int o = s.length - 4;
      for (int i = o; i < s.length; i++) {
        if (s[i] <= 0 || s[i] > Integer.MAX_VALUE) {
          throw new BadRecordException(ref.path(), "volume dimensions must be positive, got shape " + Arrays.toString(s));
        }
      }
      // a batch of no volumes ([0, C, D, H, W], as numpy saves an empty stack) is read as none; the driver writes
      // its output, a batch of none as well
      if (o == 1 && s[0] > Integer.MAX_VALUE) {
        throw new BadRecordException(ref.path(), "holds " + s[0] + " volumes, more than one file may hold (2^31 - 1)");
      }
      VolumeShape shape;
      try {
        shape = new VolumeShape((int) s[o], (int) s[o + 1], (int) s[o + 2], (int) s[o + 3]);
      } catch (IllegalArgumentException e) {
        throw new BadRecordException(ref.path(), e.getMessage());
      }
      OpenFile f = new OpenFile(ref, src, h, o == 1 ? new long[] {s[0]} : new long[0], o == 1 ? (int) s[0] : 1, shape);
      src = null;
      return f;
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + ref.path() + ": " + e.getMessage(), e);
    } finally {
      if (src != null) {
        try {
          src.close();
        } catch (IOException ignored) {
          // the failure above is what matters
        }
      }
      times.add(Phase.READ, System.nanoTime() - t0);
    }
  }

  private void loadWhole(OpenFile f, PageGate gate) {
    long raw = f.header.numel() * f.header.itemSize();
    long need = raw + f.header.numel() * 4;
    if (need > Integer.MAX_VALUE - 8) {
      throw new BadRecordException(f.ref.path(), "is Fortran-ordered and " + raw + " bytes; volpool reorders such"
          + " files in memory and takes them up to 2 GiB; save it in C order (numpy.ascontiguousarray) instead");
    }
    if (!gate.acquire(need, "Fortran-ordered " + f.ref.path())) {
      throw new PageGate.Refused();
    }
    f.lease = need;
    f.leaseGate = gate;
    long t0 = System.nanoTime();
    try {
      byte[] b = new byte[(int) raw];
      f.src.seek(f.header.dataOffset());
      f.src.readFully(b, 0, b.length);
      long t1 = times.lap(Phase.READ, t0);
      f.whole = Npy.toCOrderF32(ByteBuffer.wrap(b), f.header, f.ref.path());
      times.lap(Phase.DECODE, t1);
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + f.ref.path() + ": " + e.getMessage(), e);
    }
  }

  @Override
  public long volumes() {
    return volumes;
  }

  @Override
  public void close() {
    if (cur != null) {
      cur.release();
      cur = null;
    }
  }
}
