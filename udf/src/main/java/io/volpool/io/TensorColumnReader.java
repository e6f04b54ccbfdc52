package io.volpool.io;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.VolumeSink;
import io.volpool.memory.PageBuffers;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.parquet.bytes.ByteBufferInputStream;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.bytes.BytesUtils;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ValuesType;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.values.ValuesReader;
import org.apache.parquet.column.values.rle.RunLengthBitPackingHybridDecoder;
import org.apache.parquet.format.DataPageHeader;
import org.apache.parquet.format.DataPageHeaderV2;
import org.apache.parquet.format.PageHeader;
import org.apache.parquet.format.Util;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.CodecFactory;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;

/**
 * Reads the tensor column of a Parquet file page by page, straight into batch buffers. A
 * PLAIN-encoded page that is uncompressed (what volpool writes, and pyarrow with
 * {@code compression="none", use_dictionary=False}) or Snappy-compressed (Spark's and pyarrow's
 * default) is streamed: only its levels are decoded on the heap, and each value goes into the batch
 * buffer with one copy, from the file or, for Snappy, decompressed there from the page's bytes (mapped
 * in place for a local file) by {@link SnappyPageSource}. Any other page (other codecs,
 * dictionary-encoded, other encodings, V1 or V2) is read whole into memory taken from the
 * {@link PageGate}, decompressed and decoded with parquet-column's value readers, so every encoding
 * the library knows is read correctly.
 *
 * <p>The reader walks level entries: one per row for the binary layout (a null row has a definition
 * level below the maximum and no value), one per element for a list of floats (a row starts at
 * repetition level 0 and may span pages). Owned by its file's reader; not thread-safe.
 */
final class TensorColumnReader implements AutoCloseable {
  private static final ParquetMetadataConverter CONVERTER = new ParquetMetadataConverter();

  private final ColumnDescriptor col;
  private final int maxRep;
  private final int maxDef;
  private final CodecFactory codecs;
  private final PhaseTimes times;
  private ByteSource src;
  /** Where a streamed page's bytes come from: {@link #src} itself, or a Snappy page's decoder. */
  private ByteSource body;
  /** A streamed Snappy page's decoder (the {@link #body}), closed with the page: it may hold a mapped window. */
  private SnappyPageSource snappy;
  private String where;
  private CompressionCodecName codec;
  private long chunkValuesLeft;
  private Dictionary dictionary;
  private long dictionaryLease;
  private PageGate leaseGate;

  private PageHeader pending;
  private long pendingAt;
  private int count;
  private int idx;
  private int[] rep;
  private int[] def;
  private boolean stream;
  private long pageEnd;
  private ValuesReader values;
  private long pageLease;
  private int peekedLength = -1;
  private Binary peekedBinary;

  TensorColumnReader(ColumnDescriptor col, CodecFactory codecs, PhaseTimes times) {
    this.col = col;
    this.maxRep = col.getMaxRepetitionLevel();
    this.maxDef = col.getMaxDefinitionLevel();
    this.codecs = codecs;
    this.times = times;
  }

  /** Starts a row group's column chunk of {@code src}. */
  void openChunk(ByteSource src, ColumnChunkMetaData md, String where, PageGate gate) {
    releasePage(gate);
    releaseDictionary(gate);
    this.src = src;
    this.where = where;
    this.codec = md.getCodec();
    this.chunkValuesLeft = md.getValueCount();
    this.pending = null;
    this.count = 0;
    this.idx = 0;
    src.seek(md.getStartingPos());
  }

  /**
   * Positions on a level entry, loading pages as needed.
   *
   * @param midValue the entry continues a value (a list spanning pages): page memory is forced
   * @return false when the gate refused page memory (nothing consumed; call again)
   */
  boolean ensure(PageGate gate, boolean midValue) {
    while (idx >= count) {
      releasePage(gate);
      if (!loadPage(gate, midValue)) {
        return false;
      }
    }
    return true;
  }

  int repetition() {
    return rep == null ? 0 : rep[idx];
  }

  boolean isValue() {
    return def == null || def[idx] == maxDef;
  }

  /** Passes over an entry that holds no value (a null). */
  void skipNull() {
    idx++;
  }

  /**
   * Passes over the rest of the current row without copying it (a row rejected before its tensor
   * was read), so the next row starts where it should.
   */
  void skipRow(PageGate gate) {
    boolean first = true;
    while (true) {
      if (!ensure(gate, true)) {
        return;
      }
      if (!first && repetition() == 0) {
        return;
      }
      first = false;
      if (!isValue()) {
        idx++;
      } else if (maxRep == 0) {
        int len = binaryLength();
        if (stream) {
          body.seek(body.pos() + len);
        }
        peekedLength = -1;
        peekedBinary = null;
        idx++;
      } else if (stream) {
        body.seek(body.pos() + Float.BYTES);
        idx++;
      } else {
        values.readFloat();
        idx++;
      }
      if (idx >= count && chunkValuesLeft <= 0) {
        return;
      }
      if (maxRep == 0) {
        return;
      }
    }
  }

  /** The byte length of the binary value at the current entry (read once, then cached). */
  int binaryLength() {
    if (stream) {
      if (peekedLength < 0) {
        long t0 = System.nanoTime();
        byte[] b = new byte[4];
        try {
          body.readFully(b, 0, 4);
        } catch (IOException e) {
          throw io(e);
        }
        peekedLength = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getInt();
        if (peekedLength < 0 || body.pos() + peekedLength > pageEnd) {
          throw corrupt("binary value of " + peekedLength + " bytes runs past its page");
        }
        times.add(Phase.READ, System.nanoTime() - t0);
      }
      return peekedLength;
    }
    if (peekedBinary == null) {
      long t0 = System.nanoTime();
      peekedBinary = values.readBytes();
      times.add(Phase.DECODE, System.nanoTime() - t0);
    }
    return peekedBinary.length();
  }

  /**
   * Where the binary value at the current entry starts in the file when its page is streamed from
   * the file (uncompressed PLAIN), after its length prefix; -1 otherwise. {@link #skipStreamed()} then
   * moves on.
   */
  long streamedValueAt() {
    if (!stream || body != src) {
      return -1;
    }
    binaryLength();
    return src.pos();
  }

  /** Moves past the streamed binary value at the current entry without reading it. */
  void skipStreamed() {
    int len = binaryLength();
    body.seek(body.pos() + len);
    peekedLength = -1;
    idx++;
  }

  /** Copies the binary value at the current entry into {@code sink} and moves on. */
  void copyBinary(VolumeSink sink) {
    int len = binaryLength();
    long t0 = System.nanoTime();
    if (stream) {
      readInto(sink, len);
      times.add(Phase.READ, System.nanoTime() - t0);
    } else {
      sink.put(peekedBinary.toByteBuffer());
      times.add(Phase.DECODE, System.nanoTime() - t0);
    }
    peekedLength = -1;
    peekedBinary = null;
    idx++;
  }

  private void readInto(VolumeSink sink, int len) {
    try {
      sink.fill(len, body::readFully, body.chunk());
    } catch (IOException e) {
      throw io(e);
    }
  }

  /**
   * Copies one row of a list of floats, starting at the current entry (repetition level 0), into
   * {@code sink}; the row may continue on later pages.
   *
   * @return the number of floats copied; stops with a bad record before writing past {@code expected}
   */
  long copyFloatRow(VolumeSink sink, long expected, String record, String column, PageGate gate) {
    if (!isValue()) {
      skipNull();
      throw new BadRecordException(record, "tensor column '" + column + "' is null or empty");
    }
    long n = 0;
    while (true) {
      int start = idx;
      int j = idx;
      while (j < count && (j == start ? true : rep[j] != 0) && (def == null || def[j] == maxDef)) {
        j++;
      }
      int run = j - start;
      if (n + run > expected) {
        throw new BadRecordException(record, "tensor column '" + column + "' holds more than " + expected
            + " floats but its fixed shape needs " + expected);
      }
      long t0 = System.nanoTime();
      if (stream) {
        readInto(sink, run * Float.BYTES);
        times.add(Phase.READ, System.nanoTime() - t0);
      } else {
        for (int k = 0; k < run; k++) {
          sink.putFloat(values.readFloat());
        }
        times.add(Phase.DECODE, System.nanoTime() - t0);
      }
      n += run;
      idx = j;
      if (idx < count) {
        if (rep[idx] == 0) {
          return n;
        }
        throw new BadRecordException(record, "tensor column '" + column + "' has a null at element " + n);
      }
      if (chunkValuesLeft <= 0) {
        return n;
      }
      ensure(gate, true);
      if (rep[idx] == 0) {
        return n;
      }
      if (!isValue()) {
        throw new BadRecordException(record, "tensor column '" + column + "' has a null at element " + n);
      }
    }
  }

  private boolean loadPage(PageGate gate, boolean midValue) {
    try {
      while (true) {
        if (pending == null) {
          if (chunkValuesLeft <= 0) {
            throw corrupt("column chunk ended before all rows had a value");
          }
          long t0 = System.nanoTime();
          pendingAt = src.pos();
          ByteSource.Ahead a = src.ahead();
          pending = Util.readPageHeader(a);
          a.finish();
          times.add(Phase.READ, System.nanoTime() - t0);
        }
        PageHeader h = pending;
        switch (h.getType()) {
          case DICTIONARY_PAGE: {
            long need = (long) h.getCompressed_page_size() + h.getUncompressed_page_size();
            if (!take(gate, need, midValue)) {
              return false;
            }
            releaseDictionary(gate);
            dictionaryLease = need;
            leaseGate = gate;
            long t0 = System.nanoTime();
            ByteBuffer raw = readPage(h.getCompressed_page_size(), h.getUncompressed_page_size(), true);
            times.add(Phase.READ, System.nanoTime() - t0);
            Encoding enc = CONVERTER.getEncoding(h.getDictionary_page_header().getEncoding());
            dictionary = enc.initDictionary(col, new DictionaryPage(BytesInput.from(raw), h.getUncompressed_page_size(),
                h.getDictionary_page_header().getNum_values(), enc));
            pending = null;
            continue;
          }
          case INDEX_PAGE:
            src.seek(src.pos() + h.getCompressed_page_size());
            pending = null;
            continue;
          case DATA_PAGE:
            if (!dataPageV1(h, gate, midValue)) {
              return false;
            }
            pending = null;
            return true;
          case DATA_PAGE_V2:
            if (!dataPageV2(h, gate, midValue)) {
              return false;
            }
            pending = null;
            return true;
          default:
            throw corrupt("unknown page type " + h.getType());
        }
      }
    } catch (IOException e) {
      throw io(e);
    }
  }

  /** Takes page memory for a page read whole into the heap (compressed and decompressed size). */
  private boolean leasePage(PageHeader h, PageGate gate, boolean midValue) {
    long need = (long) h.getCompressed_page_size() + h.getUncompressed_page_size();
    if (!take(gate, need, midValue)) {
      return false;
    }
    pageLease = need;
    leaseGate = gate;
    return true;
  }

  private boolean take(PageGate gate, long bytes, boolean midValue) {
    if (midValue) {
      gate.force(bytes);
      return true;
    }
    return gate.acquire(bytes, "a Parquet page of " + bytes + " bytes in " + where);
  }

  private boolean dataPageV1(PageHeader h, PageGate gate, boolean midValue) throws IOException {
    DataPageHeader d = h.getData_page_header();
    int n = d.getNum_values();
    Encoding valEnc = CONVERTER.getEncoding(d.getEncoding());
    Encoding rlEnc = CONVERTER.getEncoding(d.getRepetition_level_encoding());
    Encoding dlEnc = CONVERTER.getEncoding(d.getDefinition_level_encoding());
    boolean levelsRle = (maxRep == 0 || rlEnc == Encoding.RLE) && (maxDef == 0 || dlEnc == Encoding.RLE);
    long t0 = System.nanoTime();
    boolean plainValues = valEnc == Encoding.PLAIN && levelsRle;
    int streamed = 0;
    if (plainValues && codec == CompressionCodecName.UNCOMPRESSED) {
      body = src;
      pageEnd = src.pos() + h.getCompressed_page_size();
      streamed = 1;
    } else if (plainValues && codec == CompressionCodecName.SNAPPY) {
      streamed = streamSnappy(h.getCompressed_page_size(), h.getUncompressed_page_size(), gate, midValue);
      if (streamed < 0) {
        return false;
      }
      pageEnd = h.getUncompressed_page_size();
    }
    if (streamed > 0) {
      rep = maxRep == 0 ? null : levels(readPrefixed(), maxRep, n);
      def = maxDef == 0 ? null : levels(readPrefixed(), maxDef, n);
      startPage(n, true);
      times.add(Phase.READ, System.nanoTime() - t0);
      return true;
    }
    if (!leasePage(h, gate, midValue)) {
      return false;
    }
    ByteBuffer page = readPage(h.getCompressed_page_size(), h.getUncompressed_page_size(), true);
    long t1 = times.lap(Phase.READ, t0);
    ByteBufferInputStream in = ByteBufferInputStream.wrap(page);
    rep = readLevels(rlEnc, ValuesType.REPETITION_LEVEL, maxRep, n, in);
    def = readLevels(dlEnc, ValuesType.DEFINITION_LEVEL, maxDef, n, in);
    values = valuesReader(valEnc);
    values.initFromPage(n, in);
    startPage(n, false);
    times.lap(Phase.DECODE, t1);
    return true;
  }

  private boolean dataPageV2(PageHeader h, PageGate gate, boolean midValue) throws IOException {
    DataPageHeaderV2 d = h.getData_page_header_v2();
    int n = d.getNum_values();
    Encoding valEnc = CONVERTER.getEncoding(d.getEncoding());
    int rlLen = d.getRepetition_levels_byte_length();
    int dlLen = d.getDefinition_levels_byte_length();
    boolean compressed = d.isIs_compressed() && codec != CompressionCodecName.UNCOMPRESSED;
    long t0 = System.nanoTime();
    long start = src.pos();
    int dataLen = h.getCompressed_page_size() - rlLen - dlLen;
    if (valEnc == Encoding.PLAIN && (!compressed || codec == CompressionCodecName.SNAPPY)) {
      // levels are never compressed in a V2 page; the values may be
      int[] r = maxRep == 0 ? skipBytes(rlLen) : levels(readBytes(rlLen), maxRep, n);
      int[] l = maxDef == 0 ? skipBytes(dlLen) : levels(readBytes(dlLen), maxDef, n);
      int streamed = 1;
      if (compressed) {
        streamed = streamSnappy(dataLen, h.getUncompressed_page_size() - rlLen - dlLen, gate, midValue);
        pageEnd = h.getUncompressed_page_size() - rlLen - dlLen;
      } else {
        body = src;
        pageEnd = start + h.getCompressed_page_size();
      }
      if (streamed > 0) {
        rep = r;
        def = l;
        startPage(n, true);
        times.add(Phase.READ, System.nanoTime() - t0);
        return true;
      }
      src.seek(start);
      if (streamed < 0) {
        return false;
      }
    }
    if (!leasePage(h, gate, midValue)) {
      return false;
    }
    rep = maxRep == 0 ? skipBytes(rlLen) : levels(readBytes(rlLen), maxRep, n);
    def = maxDef == 0 ? skipBytes(dlLen) : levels(readBytes(dlLen), maxDef, n);
    ByteBuffer data = readPage(dataLen, h.getUncompressed_page_size() - rlLen - dlLen, compressed);
    long t1 = times.lap(Phase.READ, t0);
    values = valuesReader(valEnc);
    values.initFromPage(n - d.getNum_nulls(), ByteBufferInputStream.wrap(data));
    startPage(n, false);
    times.lap(Phase.DECODE, t1);
    return true;
  }

  private void startPage(int n, boolean streamed) {
    chunkValuesLeft -= n;
    count = n;
    idx = 0;
    stream = streamed;
    peekedLength = -1;
    peekedBinary = null;
  }

  private ValuesReader valuesReader(Encoding enc) {
    if (enc.usesDictionary()) {
      if (dictionary == null) {
        throw corrupt("a " + enc + " page has no dictionary page before it");
      }
      return enc.getDictionaryBasedValuesReader(col, ValuesType.VALUES, dictionary);
    }
    return enc.getValuesReader(col, ValuesType.VALUES);
  }

  private int[] readLevels(Encoding enc, ValuesType type, int max, int n, ByteBufferInputStream in) throws IOException {
    ValuesReader r = enc.getValuesReader(col, type);
    r.initFromPage(n, in);
    if (max == 0) {
      return null;
    }
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = r.readInteger();
    }
    return out;
  }

  private int[] levels(byte[] rle, int max, int n) throws IOException {
    RunLengthBitPackingHybridDecoder dec = new RunLengthBitPackingHybridDecoder(BytesUtils.getWidthFromMaxInt(max),
        new ByteArrayInputStream(rle));
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = dec.readInt();
      if (out[i] > max) {
        throw corrupt("level " + out[i] + " above the column's maximum " + max);
      }
    }
    return out;
  }

  /** A streamed V1 page's levels: a 4-byte length, then that many bytes, from the page's body. */
  private byte[] readPrefixed() throws IOException {
    byte[] len = new byte[4];
    body.readFully(len, 0, 4);
    int n = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getInt();
    if (n < 0 || n > 1 << 30 || body.pos() + n > pageEnd) {
      throw corrupt("levels of " + n + " bytes");
    }
    byte[] b = new byte[n];
    body.readFully(b, 0, n);
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
  private int streamSnappy(int compressedSize, long uncompressedSize, PageGate gate, boolean midValue)
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

  private int[] skipBytes(int n) {
    src.seek(src.pos() + n);
    return null;
  }

  private byte[] readBytes(int n) throws IOException {
    byte[] b = new byte[n];
    src.readFully(b, 0, n);
    return b;
  }

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

  private ByteBuffer readPage(int compressedSize, int uncompressedSize, boolean maybeCompressed) throws IOException {
    boolean plain = !maybeCompressed || codec == CompressionCodecName.UNCOMPRESSED;
    if (pending.getType() == org.apache.parquet.format.PageType.DICTIONARY_PAGE) {
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

  private void releasePage(PageGate gate) {
    values = null;
    peekedBinary = null;
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

  private void releaseDictionary(PageGate gate) {
    dictionary = null;
    if (dictionaryLease > 0) {
      (leaseGate != null ? leaseGate : gate).release(dictionaryLease);
      dictionaryLease = 0;
    }
  }

  private IllegalStateException corrupt(String what) {
    return new CorruptInputException(where + ": column " + String.join(".", col.getPath()) + ": " + what
        + " (the file is corrupt or not what its footer says)");
  }

  private UncheckedIOException io(IOException e) {
    return new UncheckedIOException("reading column " + String.join(".", col.getPath()) + " of " + where + ": "
        + e.getMessage(), e);
  }

  /** Gives back page memory. */
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
