package io.volpool.format;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * A safetensors file read into memory: every tensor converted to float32 (from F32, F64, F16 or
 * BF16) and the string {@code __metadata__}. Immutable once read; holds no native resources.
 */
public final class SafeTensors {
  /** The largest JSON header accepted (the reference implementation's own cap is 100 MB). */
  public static final long MAX_HEADER_BYTES = 100L * 1024 * 1024;

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
          .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  /** One tensor: its shape and its values in C order. */
  public record Tensor(long[] shape, float[] values) {
    public long numel() {
      return values.length;
    }
  }

  private final String name;
  private final Map<String, Tensor> tensors;
  private final Map<String, String> metadata;

  private SafeTensors(String name, Map<String, Tensor> tensors, Map<String, String> metadata) {
    this.name = name;
    this.tensors = Collections.unmodifiableMap(tensors);
    this.metadata = Collections.unmodifiableMap(metadata);
  }

  /** The largest file read as a model: one Java array holds it. */
  public static final long MAX_FILE_BYTES = Integer.MAX_VALUE - 64;

  /**
   * Checks a safetensors file from its head and its length before it is read whole: the header
   * length, the header itself, and that its tensors end exactly where the file does (the format's
   * own rule), so a file of another kind or size is refused after at most the header is read.
   *
   * @param head the file from its first byte (read up to the end of the header)
   * @param length the file's length in bytes as its filesystem reports it
   * @throws TensorFormatException naming the file and the rule broken
   */
  public static void checkHead(java.io.InputStream head, long length, String name) throws java.io.IOException {
    byte[] len = head.readNBytes(8);
    if (len.length < 8) {
      throw err(name, "file is " + len.length + " bytes, too short for the 8-byte header length");
    }
    long headerLen = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getLong();
    if (headerLen < 2 || headerLen > MAX_HEADER_BYTES) {
      throw err(name, "header length " + headerLen + " is outside 2.." + MAX_HEADER_BYTES + " bytes");
    }
    if (8 + headerLen > length) {
      throw err(name, "header length " + headerLen + " runs past the end of the file (" + length + " bytes)");
    }
    byte[] header = head.readNBytes((int) headerLen);
    if (header.length < headerLen) {
      throw err(name, "header length " + headerLen + " runs past the end of the file (" + (8 + header.length) + " bytes)");
    }
    JsonNode root;
    try {
      root = JSON.readTree(header);
    } catch (JsonProcessingException e) {
      throw err(name, "header is not valid JSON: " + e.getOriginalMessage());
    }
    if (root == null || !root.isObject()) {
      throw err(name, "header is not a JSON object");
    }
    long end = 0;
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      JsonNode offs = e.getValue().path("data_offsets");
      if (!e.getKey().equals("__metadata__") && offs.isArray() && offs.size() == 2 && offs.get(1).canConvertToLong()) {
        end = Math.max(end, offs.get(1).asLong());
      }
    }
    long expected = 8 + headerLen + end;
    if (expected != length) {
      throw err(name, "its header's tensors end at byte " + expected + " but the file holds " + length + " bytes"
          + " (the tensors must fill the data section exactly)");
    }
    if (length > MAX_FILE_BYTES) {
      throw err(name, "file is " + length + " bytes, more than the " + MAX_FILE_BYTES + " a model may have here");
    }
  }

  /**
   * Parses a whole safetensors file.
   *
   * @param name the file's path, used in error messages
   * @throws TensorFormatException naming the file, the tensor key and the rule broken
   */
  public static SafeTensors read(byte[] bytes, String name) {
    if (bytes.length < 8) {
      throw err(name, "file is " + bytes.length + " bytes, too short for the 8-byte header length");
    }
    ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    long headerLen = buf.getLong(0);
    if (headerLen < 2 || headerLen > MAX_HEADER_BYTES) {
      throw err(name, "header length " + headerLen + " is outside 2.." + MAX_HEADER_BYTES + " bytes");
    }
    if (8 + headerLen > bytes.length) {
      throw err(name, "header length " + headerLen + " runs past the end of the file (" + bytes.length + " bytes)");
    }
    String header;
    try {
      header = StandardCharsets.UTF_8.newDecoder().onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
          .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes, 8, (int) headerLen)).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      throw err(name, "header is not valid UTF-8");
    }
    if (!header.startsWith("{")) {
      throw err(name, "header does not start with '{'");
    }
    JsonNode root;
    try {
      root = JSON.readTree(header);
    } catch (JsonProcessingException e) {
      String m = e.getOriginalMessage();
      if (m != null && m.startsWith("Duplicate field")) {
        throw err(name, "header names a key twice: " + m);
      }
      throw err(name, "header is not valid JSON: " + m);
    }
    if (root == null || !root.isObject()) {
      throw err(name, "header is not a JSON object");
    }
    long dataStart = 8 + headerLen;
    long dataLen = bytes.length - dataStart;
    Map<String, Tensor> tensors = new LinkedHashMap<>();
    Map<String, String> metadata = new TreeMap<>();
    java.util.List<long[]> ranges = new java.util.ArrayList<>();
    java.util.List<String> rangeKeys = new java.util.ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String key = e.getKey();
      JsonNode v = e.getValue();
      if (key.equals("__metadata__")) {
        if (!v.isObject()) {
          throw err(name, "__metadata__ must be an object of strings, got " + v.getNodeType());
        }
        for (Iterator<Map.Entry<String, JsonNode>> m = v.fields(); m.hasNext(); ) {
          Map.Entry<String, JsonNode> me = m.next();
          if (!me.getValue().isTextual()) {
            throw err(name, "__metadata__ value of '" + me.getKey() + "' must be a string, got " + me.getValue());
          }
          metadata.put(me.getKey(), me.getValue().asText());
        }
        continue;
      }
      if (!v.isObject()) {
        throw err(name, "tensor '" + key + "' must be an object with dtype, shape and data_offsets");
      }
      long[] range = new long[2];
      tensors.put(key, tensor(bytes, dataStart, dataLen, key, v, name, range));
      ranges.add(range);
      rangeKeys.add(key);
    }
    // as the reference implementation: sorted by offset, the tensors tile the data section exactly
    Integer[] order = new Integer[ranges.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Long.compare(ranges.get(a)[0], ranges.get(b)[0]) != 0
        ? Long.compare(ranges.get(a)[0], ranges.get(b)[0]) : Long.compare(ranges.get(a)[1], ranges.get(b)[1]));
    long at = 0;
    for (int i : order) {
      long[] r = ranges.get(i);
      if (r[0] != at) {
        throw err(name, "tensor '" + rangeKeys.get(i) + "' starts at byte " + r[0] + " of the data section where the"
            + " tensors before it end at " + at + " (" + (r[0] < at ? "overlapping" : "a gap") + ")");
      }
      at = r[1];
    }
    if (at != dataLen) {
      throw err(name, "the tensors cover " + at + " bytes of the " + dataLen + "-byte data section"
          + " (trailing bytes or a truncated tensor)");
    }
    return new SafeTensors(name, tensors, metadata);
  }

  private static Tensor tensor(byte[] bytes, long dataStart, long dataLen, String key, JsonNode v, String name,
      long[] range) {
    JsonNode dt = v.path("dtype");
    String dtype = dt.isTextual() ? dt.asText() : "";
    int item;
    switch (dtype) {
      case "F32": item = 4; break;
      case "F64": item = 8; break;
      case "F16": case "BF16": item = 2; break;
      default:
        throw err(name, "tensor '" + key + "' has dtype '" + (dt.isMissingNode() ? "" : dt.isTextual() ? dtype : dt)
            + "'; supported: F32, F64, F16, BF16");
    }
    JsonNode shapeNode = v.path("shape");
    JsonNode offs = v.path("data_offsets");
    if (!shapeNode.isArray() || !offs.isArray() || offs.size() != 2) {
      throw err(name, "tensor '" + key + "' needs a 'shape' array and two 'data_offsets'");
    }
    long[] shape = new long[shapeNode.size()];
    long numel = 1;
    for (int i = 0; i < shape.length; i++) {
      JsonNode d = shapeNode.get(i);
      if (!d.isIntegralNumber() || !d.canConvertToLong() || d.asLong() < 0) {
        throw err(name, "tensor '" + key + "' has shape entry '" + d + "', not a non-negative integer");
      }
      shape[i] = d.asLong();
      try {
        numel = Math.multiplyExact(numel, shape[i]);
      } catch (ArithmeticException e) {
        throw err(name, "tensor '" + key + "' has shape " + shapeNode + " whose element count overflows 64 bits");
      }
    }
    for (int i = 0; i < 2; i++) {
      if (!offs.get(i).isIntegralNumber() || !offs.get(i).canConvertToLong() || offs.get(i).asLong() < 0) {
        throw err(name, "tensor '" + key + "' has data_offsets " + offs + ", not two non-negative integers");
      }
    }
    long begin = offs.get(0).asLong();
    long end = offs.get(1).asLong();
    if (end < begin || end > dataLen) {
      throw err(name, "tensor '" + key + "' has data_offsets [" + begin + ", " + end
          + "] outside the " + dataLen + "-byte data section");
    }
    long need;
    try {
      need = Math.multiplyExact(numel, (long) item);
    } catch (ArithmeticException e) {
      throw err(name, "tensor '" + key + "' has shape " + Arrays.toString(shape) + " whose byte size overflows 64 bits");
    }
    if (end - begin != need) {
      throw err(name, "tensor '" + key + "' has " + (end - begin) + " bytes but shape "
          + Arrays.toString(shape) + " of " + dtype + " needs " + need);
    }
    if (numel > Integer.MAX_VALUE) {
      throw err(name, "tensor '" + key + "' has " + numel + " elements, more than a weight tensor may hold");
    }
    range[0] = begin;
    range[1] = end;
    ByteBuffer d = ByteBuffer.wrap(bytes, (int) (dataStart + begin), (int) (end - begin)).slice()
        .order(ByteOrder.LITTLE_ENDIAN);
    float[] out = new float[(int) numel];
    for (int i = 0; i < out.length; i++) {
      switch (dtype) {
        case "F32": out[i] = d.getFloat(i * 4); break;
        case "F64": out[i] = (float) d.getDouble(i * 8); break;
        case "F16": out[i] = HalfFloats.f16ToFloat(d.getShort(i * 2)); break;
        default: out[i] = HalfFloats.bf16ToFloat(d.getShort(i * 2)); break;
      }
    }
    return new Tensor(shape, out);
  }

  public String name() {
    return name;
  }

  public Map<String, Tensor> tensors() {
    return tensors;
  }

  public Map<String, String> metadata() {
    return metadata;
  }

  /** The tensor under {@code key}; a missing key is an error that lists the keys present. */
  public Tensor require(String key) {
    Tensor t = tensors.get(key);
    if (t == null) {
      throw err(name, "missing tensor '" + key + "' (keys present: " + tensors.keySet() + ")");
    }
    return t;
  }

  private static TensorFormatException err(String name, String rule) {
    return new TensorFormatException(name + ": not a usable safetensors file: " + rule);
  }
}
