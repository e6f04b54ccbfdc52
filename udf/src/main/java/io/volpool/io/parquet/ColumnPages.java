package io.volpool.io.parquet;

import io.volpool.io.ByteSource;
import io.volpool.io.CorruptInputException;
import io.volpool.io.PageGate;

import io.volpool.memory.PageBuffers;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.format.PageHeader;
import org.apache.parquet.format.Util;
import org.apache.parquet.hadoop.CodecFactory;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;

/**
 * The page layer of a Parquet column chunk: page headers in order, each page's bytes, and the memory
 * they take. A page is either streamed, its bytes read where they lie ({@link #body}: the file itself
 * for an uncompressed page, a {@link SnappyPageSource} for a Snappy one), or read whole into page
 * buffers and decompressed ({@link #read}), with page memory taken from the {@link PageGate}. Knows
 * nothing of levels or values: {@link TensorColumnReader} decodes those. Not thread-safe.
 */
final class ColumnPages implements AutoCloseable {
  private final ColumnDescriptor col;
  private final CodecFactory codecs;
  private ByteSource src;
  /** Where a streamed page's bytes come from: {@link #src} itself, or a Snappy page's decoder. */
  private ByteSource body;
  /** A streamed Snappy page's decoder (the {@link #body}), closed with the page: it may hold a mapped window. */
  private SnappyPageSource snappy;
  private String where;
  private CompressionCodecName codec;
  private long dictionaryLease;
  private long pageLease;
  private PageGate leaseGate;
  private PageHeader pending;

  ColumnPages(ColumnDescriptor col, CodecFactory codecs) {
    this.col = col;
    this.codecs = codecs;
  }

  /** Starts a row group's column chunk of {@code src}, giving back what the previous chunk held. */
  void open(ByteSource src, ColumnChunkMetaData md, String where, PageGate gate) {
    releasePage(gate);
    releaseDictionary(gate);
    this.src = src;
    this.where = where;
    this.codec = md.getCodec();
    this.pending = null;
    src.seek(md.getStartingPos());
  }

  ByteSource src() {
    return src;
  }

  CompressionCodecName codec() {
    return codec;
  }

  String where() {
    return where;
  }

  /** The next page's header, read once (a page whose memory the gate refused is asked for again). */
  PageHeader header() throws IOException {
    if (pending == null) {
      ByteSource.Ahead a = src.ahead();
      pending = Util.readPageHeader(a);
      a.finish();
    }
    return pending;
  }

  /** The page of the last {@link #header} is read: the next call reads the next header. */
  void done() {
    pending = null;
  }

  /** The streamed page's bytes (after {@link #streamFromFile} or {@link #streamSnappy}); null when none is streamed. */
  ByteSource body() {
    return body;
  }

  /** Streams the uncompressed page at the source's position from the file itself. */
  void streamFromFile() {
    body = src;
  }

  /** Takes page memory for a page read whole into the heap (compressed and decompressed size). */
  boolean leasePage(PageHeader h, PageGate gate, boolean midValue) {
    long need = (long) h.getCompressed_page_size() + h.getUncompressed_page_size();
    if (!take(gate, need, midValue)) {
      return false;
    }
    pageLease = need;
    leaseGate = gate;
    return true;
  }

  boolean take(PageGate gate, long bytes, boolean midValue) {
    if (midValue) {
      gate.force(bytes);
      return true;
    }
    return gate.acquire(bytes, "a Parquet page of " + bytes + " bytes in " + where);
  }

  /** Takes page memory for a dictionary page (compressed and decompressed size), held until {@link #releaseDictionary}. */
  boolean leaseDictionary(PageHeader h, PageGate gate, boolean midValue) {
    long need = (long) h.getCompressed_page_size() + h.getUncompressed_page_size();
    if (!take(gate, need, midValue)) {
      return false;
    }
    releaseDictionary(gate);
    dictionaryLease = need;
    leaseGate = gate;
    return true;
  }

  /**
   * Makes the Snappy page whose {@code compressedSize} bytes start at the source's position the
   * streamed {@link #body}: mapped in place a window at a time for a local file (at most
   * {@link SnappyPageSource.Compressed#WINDOW} of it; page-cache pages, not taken from the gate, which
   * counts the memory a reader allocates),
   * else read into the reader's raw buffer (page memory taken from the gate). The source moves past
   * the page.
   *
   * @return 1 when streamed; 0 when the page must be decompressed whole (the source is back at the
   *     page, nothing taken); -1 when the gate refused memory (nothing consumed)
   */
  int streamSnappy(int compressedSize, long uncompressedSize, PageGate gate, boolean midValue)
      throws IOException {
    if ((long) compressedSize * STREAM_RATIO_DENOMINATOR < uncompressedSize * (STREAM_RATIO_DENOMINATOR - 1)) {
      return 0;
    }
    long at = src.pos();
    SnappyPageSource.Compressed in;
    if (src.mappable()) {
      if (at + compressedSize > src.length()) {
        throw corrupt("a page of " + compressedSize + " bytes at offset " + at + " runs past the file's end ("
            + src.length() + " bytes)");
      }
      in = SnappyPageSource.Compressed.mapped(src, at, compressedSize);
    } else {
      if (!take(gate, compressedSize, midValue)) {
        return -1;
      }
      pageLease = compressedSize;
      leaseGate = gate;
      ByteBuffer raw = scratch(true, compressedSize);
      src.readFully(raw);
      raw.flip();
      in = SnappyPageSource.Compressed.of(raw);
    }
    SnappyPageSource s;
    try {
      s = SnappyPageSource.open(in, uncompressedSize, src.name());
    } catch (IllegalArgumentException e) {
      in.close();
      throw corrupt("cannot decompress a SNAPPY page: " + e.getMessage());
    } catch (InternalError e) {
      // the JDK's answer to a fault on a mapped page: the file was truncated while it was read
      in.close();
      throw io(new IOException("the file changed while it was read (" + e.getMessage() + ")", e));
    }
    if (s == null) {
      in.close();
      releasePage(gate);
      src.seek(at);
      return 0;
    }
    snappy = s;
    body = s;
    snappyStreamed++;
    src.seek(at + compressedSize);
    return 1;
  }

  void skip(int n) {
    src.seek(src.pos() + n);
  }

  byte[] readBytes(int n) throws IOException {
    byte[] b = new byte[n];
    src.readFully(b, 0, n);
    return b;
  }

  /**
   * A Snappy page is streamed only when it compressed to at least 63/64 of its size. Such a page is
   * nearly all long literals, which {@link SnappyPageSource} copies as fast as a plain read (6.8 GB/s
   * from a mapping on one thread against 2.6 for a read, a native decompression and a copy). A page
   * that compresses further has a short copy every few bytes (float32 volumes of few distinct values:
   * 3.8 million tags in 24 MiB, ratio 0.87), and there snappy-java's native decoder is 2.6-3x faster
   * per tag than this Java one, which outweighs the copy it saves (measured on the 2-core machine,
   * 2026-12-02, docs/benchmarks.md).
   */
  static final int STREAM_RATIO_DENOMINATOR = 64;

  /**
   * Pages up to this size reuse the reader's two direct buffers (compressed and decompressed bytes),
   * taken from {@link PageBuffers} and grown to the largest page seen; larger pages get buffers of
   * their own, given back as soon as the page is done. Writers put many volumes in a page
   * (parquet-mr and Spark check the page size every 100 values: 19 MiB pages of reference volumes;
   * pyarrow one page per row group), so the limit must hold such pages: a fresh buffer per page made
   * the collector run all the time. The reader gives its buffers back when it closes, so
   * the next task's reader finds them.
   */
  static final int REUSE_LIMIT = 64 << 20;
  private ByteBuffer rawScratch;
  private ByteBuffer plainScratch;
  private final java.util.List<ByteBuffer> pageOwn = new java.util.ArrayList<>();
  private long scratchTakes;

  private long snappyStreamed;
  private long wholePages;

  /** Compressed pages decompressed whole into a page buffer so far (the path {@link #snappyStreamed} avoids). */
  long wholePages() {
    return wholePages;
  }

  /** Snappy pages decoded straight into batch buffers so far: tests check that the streamed path ran. */
  long snappyStreamed() {
    return snappyStreamed;
  }

  /** Page buffers this reader took so far (its two grown ones and pages' own): tests check reuse. */
  long scratchTakes() {
    return scratchTakes;
  }

  /** A direct buffer of {@code size} bytes for the current page: a reused scratch buffer, or the page's own. */
  private ByteBuffer scratch(boolean raw, int size) {
    if (size > REUSE_LIMIT) {
      scratchTakes++;
      ByteBuffer b = PageBuffers.take(size);
      pageOwn.add(b);
      return b;
    }
    ByteBuffer b = raw ? rawScratch : plainScratch;
    if (b == null || b.capacity() < size) {
      PageBuffers.give(b);
      scratchTakes++;
      b = PageBuffers.take(size);
      if (raw) {
        rawScratch = b;
      } else {
        plainScratch = b;
      }
    }
    return b.clear().limit(size);
  }

  /**
   * Reads the page body of {@code compressedSize} bytes at the source's position and decompresses it
   * when {@code maybeCompressed}; a dictionary page's into heap memory of its own (it outlives the
   * pages after it), any other's into the reader's page buffers.
   */
  ByteBuffer read(int compressedSize, int uncompressedSize, boolean maybeCompressed, boolean dictionary) throws IOException {
    boolean plain = !maybeCompressed || codec == CompressionCodecName.UNCOMPRESSED;
    if (dictionary) {
      // a dictionary outlives the pages after it: its own heap memory, never the scratch buffers
      byte[] raw = new byte[compressedSize];
      src.readFully(raw, 0, compressedSize);
      return plain ? ByteBuffer.wrap(raw) : decompressOnHeap(raw, compressedSize, uncompressedSize);
    }
    boolean direct = plain || codec == CompressionCodecName.SNAPPY || codec == CompressionCodecName.ZSTD
        || codec == CompressionCodecName.LZ4_RAW;
    if (!direct) {
      // other codecs through parquet-hadoop's codec factory, on the heap
      byte[] raw = new byte[compressedSize];
      src.readFully(raw, 0, compressedSize);
      return decompressOnHeap(raw, compressedSize, uncompressedSize);
    }
    // the file's bytes go straight into a direct buffer (one copy, by the kernel, for a local file),
    // and a codec decompresses from it into another
    ByteBuffer raw = scratch(true, compressedSize);
    src.readFully(raw);
    raw.flip();
    if (plain) {
      return raw.slice();
    }
    ByteBuffer out = scratch(false, uncompressedSize);
    wholePages++;
    try {
      long n;
      switch (codec) {
        case SNAPPY:
          n = org.xerial.snappy.Snappy.uncompress(raw, out);
          break;
        case ZSTD:
          n = com.github.luben.zstd.Zstd.decompressDirectByteBuffer(out, 0, uncompressedSize, raw, 0, compressedSize);
          break;
        default:
          n = net.jpountz.lz4.LZ4Factory.fastestInstance().safeDecompressor().decompress(raw, 0, compressedSize, out, 0,
              uncompressedSize);
          break;
      }
      if (n != uncompressedSize) {
        throw corrupt("a " + codec + " page decompressed to " + n + " bytes where its header says " + uncompressedSize);
      }
      return out.clear().limit(uncompressedSize).slice();
    } catch (IOException | RuntimeException e) {
      if (e instanceof CorruptInputException c) {
        throw c;
      }
      throw corrupt("cannot decompress a " + codec + " page: " + e.getMessage());
    }
  }

  private ByteBuffer decompressOnHeap(byte[] raw, int compressedSize, int uncompressedSize) {
    try {
      ByteBuffer b = codecs.getDecompressor(codec).decompress(BytesInput.from(raw, 0, compressedSize), uncompressedSize)
          .toByteBuffer();
      if (b.remaining() != uncompressedSize) {
        throw corrupt("a " + codec + " page decompressed to " + b.remaining() + " bytes where its header says "
            + uncompressedSize);
      }
      return b;
    } catch (IOException | RuntimeException e) {
      if (e instanceof CorruptInputException c) {
        throw c;
      }
      throw corrupt("cannot decompress a " + codec + " page: " + e.getMessage());
    }
  }

  /** The current page is done: its Snappy decoder, its own buffers and its page memory are given back. */
  void releasePage(PageGate gate) {
    body = null;
    if (snappy != null) {
      snappy.close();
      snappy = null;
    }
    for (ByteBuffer b : pageOwn) {
      PageBuffers.give(b);
    }
    pageOwn.clear();
    if (pageLease > 0) {
      (leaseGate != null ? leaseGate : gate).release(pageLease);
      pageLease = 0;
    }
  }

  /** The chunk's dictionary is done: its page memory is given back. */
  void releaseDictionary(PageGate gate) {
    if (dictionaryLease > 0) {
      (leaseGate != null ? leaseGate : gate).release(dictionaryLease);
      dictionaryLease = 0;
    }
  }

  CorruptInputException corrupt(String what) {
    return new CorruptInputException(where + ": column " + String.join(".", col.getPath()) + ": " + what
        + " (the file is corrupt or not what its footer says)");
  }

  UncheckedIOException io(IOException e) {
    return new UncheckedIOException("reading column " + String.join(".", col.getPath()) + " of " + where + ": "
        + e.getMessage(), e);
  }

  /** Gives back page memory and the page buffers. */
  @Override
  public void close() {
    releasePage(null);
    releaseDictionary(null);
    PageBuffers.give(rawScratch);
    PageBuffers.give(plainScratch);
    rawScratch = null;
    plainScratch = null;
  }
}
