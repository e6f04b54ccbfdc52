package io.volpool.io.parquet;

import io.volpool.io.BadRecordException;
import io.volpool.io.ByteSource;
import io.volpool.io.CorruptInputException;
import io.volpool.io.PageGate;

import io.volpool.backend.Phase;
import io.volpool.backend.PhaseTimes;
import io.volpool.backend.VolumeSink;
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
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.CodecFactory;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;

/**
 * The levels-and-values layer of the tensor column of a Parquet file: over the pages of
 * {@link ColumnPages} it decodes repetition and definition levels and walks the values, straight into
 * batch buffers. A
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
  private final PhaseTimes times;
  /** The page layer: headers, page bytes, page memory. */
  private final ColumnPages pages;
  private long chunkValuesLeft;
  private Dictionary dictionary;

  private int count;
  private int idx;
  private int[] rep;
  private int[] def;
  private boolean stream;
  private long pageEnd;
  private ValuesReader values;
  private int peekedLength = -1;
  private Binary peekedBinary;

  /** How a list column's values are stored (4-byte INT32 for int8 to int32, 2 bytes for float16); null for binary. */
  private final io.volpool.format.ValueType listType;
  /** A dictionary-encoded or compressed list's values, re-encoded as stored before they go to the sink. */
  private ByteBuffer scratch;

  TensorColumnReader(ColumnDescriptor col, CodecFactory codecs, PhaseTimes times) {
    this.col = col;
    io.volpool.format.ValueType[] vt = col.getMaxRepetitionLevel() > 0 ? TensorLayout.valueTypes(col.getPrimitiveType())
        : null;
    this.listType = vt == null ? null : vt[0];
    this.maxRep = col.getMaxRepetitionLevel();
    this.maxDef = col.getMaxDefinitionLevel();
    this.times = times;
    this.pages = new ColumnPages(col, codecs);
  }

  /** Starts a row group's column chunk of {@code src}. */
  void openChunk(ByteSource src, ColumnChunkMetaData md, String where, PageGate gate) {
    releasePage(gate);
    releaseDictionary(gate);
    pages.open(src, md, where, gate);
    this.chunkValuesLeft = md.getValueCount();
    this.count = 0;
    this.idx = 0;
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
          pages.body().seek(pages.body().pos() + len);
        }
        peekedLength = -1;
        peekedBinary = null;
        idx++;
      } else if (stream) {
        pages.body().seek(pages.body().pos() + listType.itemSize());
        idx++;
      } else {
        values.skip();
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
          pages.body().readFully(b, 0, 4);
        } catch (IOException e) {
          throw io(e);
        }
        peekedLength = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getInt();
        if (peekedLength < 0 || pages.body().pos() + peekedLength > pageEnd) {
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
    if (!stream || pages.body() != pages.src()) {
      return -1;
    }
    binaryLength();
    return pages.src().pos();
  }

  /** Moves past the streamed binary value at the current entry without reading it. */
  void skipStreamed() {
    int len = binaryLength();
    pages.body().seek(pages.body().pos() + len);
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
      ByteSource b = pages.body();
      sink.fill(len, b::readFully, b.chunk());
    } catch (IOException e) {
      throw io(e);
    }
  }

  /**
   * Copies one row of a list of numbers, starting at the current entry (repetition level 0), into
   * {@code sink} as Parquet stores them (little-endian, {@link TensorLayout#listStored()}); the row
   * may continue on later pages.
   *
   * @return the number of values copied; stops with a bad record before writing past {@code expected}
   */
  long copyListRow(VolumeSink sink, long expected, String record, String column, PageGate gate) {
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
            + " values but its fixed shape needs " + expected);
      }
      long t0 = System.nanoTime();
      if (stream) {
        readInto(sink, run * listType.itemSize());
        times.add(Phase.READ, System.nanoTime() - t0);
      } else {
        decodeInto(sink, run);
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

  /** Decodes {@code run} values of the page and puts them into {@code sink} as Parquet stores them. */
  private void decodeInto(VolumeSink sink, int run) {
    if (scratch == null) {
      scratch = ByteBuffer.allocate(64 << 10).order(ByteOrder.LITTLE_ENDIAN);
    }
    int size = listType.itemSize();
    for (int k = 0; k < run; k++) {
      if (scratch.remaining() < size) {
        sink.put(scratch.flip());
        scratch.clear();
      }
      switch (listType.dtype()) {
        case FLOAT32 -> scratch.putFloat(values.readFloat());
        case FLOAT64 -> scratch.putDouble(values.readDouble());
        case INT32 -> scratch.putInt(values.readInteger());
        case FLOAT16 -> {
          Binary b = values.readBytes();
          if (b.length() != 2) {
            throw corrupt("a float16 value of " + b.length() + " bytes");
          }
          scratch.put(b.toByteBuffer());
        }
        default -> throw new IllegalStateException("no list of " + listType);
      }
    }
    sink.put(scratch.flip());
    scratch.clear();
  }

  private boolean loadPage(PageGate gate, boolean midValue) {
    try {
      while (true) {
        if (chunkValuesLeft <= 0) {
          throw corrupt("column chunk ended before all rows had a value");
        }
        long th = System.nanoTime();
        PageHeader h = pages.header();
        times.add(Phase.READ, System.nanoTime() - th);
        switch (h.getType()) {
          case DICTIONARY_PAGE: {
            if (!pages.leaseDictionary(h, gate, midValue)) {
              return false;
            }
            dictionary = null;
            long t0 = System.nanoTime();
            ByteBuffer raw = pages.read(h.getCompressed_page_size(), h.getUncompressed_page_size(), true, true);
            times.add(Phase.READ, System.nanoTime() - t0);
            Encoding enc = CONVERTER.getEncoding(h.getDictionary_page_header().getEncoding());
            dictionary = enc.initDictionary(col, new DictionaryPage(BytesInput.from(raw), h.getUncompressed_page_size(),
                h.getDictionary_page_header().getNum_values(), enc));
            pages.done();
            continue;
          }
          case INDEX_PAGE:
            pages.skip(h.getCompressed_page_size());
            pages.done();
            continue;
          case DATA_PAGE:
            if (!dataPageV1(h, gate, midValue)) {
              return false;
            }
            pages.done();
            return true;
          case DATA_PAGE_V2:
            if (!dataPageV2(h, gate, midValue)) {
              return false;
            }
            pages.done();
            return true;
          default:
            throw corrupt("unknown page type " + h.getType());
        }
      }
    } catch (IOException e) {
      throw io(e);
    }
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
    ByteSource src = pages.src();
    if (plainValues && pages.codec() == CompressionCodecName.UNCOMPRESSED) {
      pages.streamFromFile();
      pageEnd = src.pos() + h.getCompressed_page_size();
      streamed = 1;
    } else if (plainValues && pages.codec() == CompressionCodecName.SNAPPY) {
      streamed = pages.streamSnappy(h.getCompressed_page_size(), h.getUncompressed_page_size(), gate, midValue);
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
    if (!pages.leasePage(h, gate, midValue)) {
      return false;
    }
    ByteBuffer page = pages.read(h.getCompressed_page_size(), h.getUncompressed_page_size(), true, false);
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
    CompressionCodecName codec = pages.codec();
    ByteSource src = pages.src();
    boolean compressed = d.isIs_compressed() && codec != CompressionCodecName.UNCOMPRESSED;
    long t0 = System.nanoTime();
    long start = src.pos();
    int dataLen = h.getCompressed_page_size() - rlLen - dlLen;
    if (valEnc == Encoding.PLAIN && (!compressed || codec == CompressionCodecName.SNAPPY)) {
      // levels are never compressed in a V2 page; the values may be
      int[] r = maxRep == 0 ? skipBytes(rlLen) : levels(pages.readBytes(rlLen), maxRep, n);
      int[] l = maxDef == 0 ? skipBytes(dlLen) : levels(pages.readBytes(dlLen), maxDef, n);
      int streamed = 1;
      if (compressed) {
        streamed = pages.streamSnappy(dataLen, h.getUncompressed_page_size() - rlLen - dlLen, gate, midValue);
        pageEnd = h.getUncompressed_page_size() - rlLen - dlLen;
      } else {
        pages.streamFromFile();
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
    if (!pages.leasePage(h, gate, midValue)) {
      return false;
    }
    rep = maxRep == 0 ? skipBytes(rlLen) : levels(pages.readBytes(rlLen), maxRep, n);
    def = maxDef == 0 ? skipBytes(dlLen) : levels(pages.readBytes(dlLen), maxDef, n);
    ByteBuffer data = pages.read(dataLen, h.getUncompressed_page_size() - rlLen - dlLen, compressed, false);
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

  /** A streamed V1 page's levels: a 4-byte length, then that many bytes, from the page's pages.body(). */
  private byte[] readPrefixed() throws IOException {
    byte[] len = new byte[4];
    pages.body().readFully(len, 0, 4);
    int n = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getInt();
    if (n < 0 || n > 1 << 30 || pages.body().pos() + n > pageEnd) {
      throw corrupt("levels of " + n + " bytes");
    }
    byte[] b = new byte[n];
    pages.body().readFully(b, 0, n);
    return b;
  }

  /** An absent level stream: its bytes are passed over. */
  private int[] skipBytes(int n) {
    pages.skip(n);
    return null;
  }

  private void releasePage(PageGate gate) {
    values = null;
    peekedBinary = null;
    pages.releasePage(gate);
  }

  private void releaseDictionary(PageGate gate) {
    dictionary = null;
    pages.releaseDictionary(gate);
  }

  private CorruptInputException corrupt(String what) {
    return pages.corrupt(what);
  }

  private UncheckedIOException io(IOException e) {
    return pages.io(e);
  }

  /** Compressed pages decompressed whole into a page buffer so far (the path the streamed Snappy pages avoid). */
  long wholePages() {
    return pages.wholePages();
  }

  /** Snappy pages decoded straight into batch buffers so far: tests check that the streamed path ran. */
  long snappyStreamed() {
    return pages.snappyStreamed();
  }

  /** Page buffers the page layer took so far (its two grown ones and pages' own): tests check reuse. */
  long scratchTakes() {
    return pages.scratchTakes();
  }

  /** Gives back page memory. */
  @Override
  public void close() {
    releasePage(null);
    releaseDictionary(null);
    pages.close();
  }
}
