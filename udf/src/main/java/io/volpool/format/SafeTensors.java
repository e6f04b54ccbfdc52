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
      new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

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
    JsonNode root;
    try {
      root = JSON.readTree(new String(bytes, 8, (int) headerLen, StandardCharsets.UTF_8));
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
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String key = e.getKey();
      JsonNode v = e.getValue();
      if (key.equals("__metadata__")) {
        v.fields().forEachRemaining(m -> metadata.put(m.getKey(), m.getValue().asText()));
        continue;
      }
      tensors.put(key, tensor(bytes, dataStart, dataLen, key, v, name));
    }
    return new SafeTensors(name, tensors, metadata);
  }

  private static Tensor tensor(byte[] bytes, long dataStart, long dataLen, String key, JsonNode v, String name) {
    String dtype = v.path("dtype").asText("");
    int item;
    switch (dtype) {
      case "F32": item = 4; break;
      case "F64": item = 8; break;
      case "F16": case "BF16": item = 2; break;
      default:
        throw err(name, "tensor '" + key + "' has dtype '" + dtype + "'; supported: F32, F64, F16, BF16");
    }
    JsonNode shapeNode = v.path("shape");
    JsonNode offs = v.path("data_offsets");
    if (!shapeNode.isArray() || !offs.isArray() || offs.size() != 2) {
      throw err(name, "tensor '" + key + "' needs a 'shape' array and two 'data_offsets'");
    }
    long[] shape = new long[shapeNode.size()];
    long numel = 1;
    for (int i = 0; i < shape.length; i++) {
      if (!shapeNode.get(i).canConvertToLong() || shapeNode.get(i).asLong() < 0) {
        throw err(name, "tensor '" + key + "' has shape entry '" + shapeNode.get(i) + "', not a non-negative integer");
      }
      shape[i] = shapeNode.get(i).asLong();
      numel = Math.multiplyExact(numel, shape[i]);
    }
    long begin = offs.get(0).asLong(-1);
    long end = offs.get(1).asLong(-1);
    if (begin < 0 || end < begin || end > dataLen) {
      throw err(name, "tensor '" + key + "' has data_offsets [" + begin + ", " + end
          + "] outside the " + dataLen + "-byte data section");
    }
    if (end - begin != numel * item) {
      throw err(name, "tensor '" + key + "' has " + (end - begin) + " bytes but shape "
          + Arrays.toString(shape) + " of " + dtype + " needs " + numel * item);
    }
    if (numel > Integer.MAX_VALUE) {
      throw err(name, "tensor '" + key + "' has " + numel + " elements, more than a weight tensor may hold");
    }
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
