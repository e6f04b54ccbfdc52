package io.volpool.ops.fused;

import io.volpool.format.SafeTensors;
import io.volpool.format.TensorFormatException;
import java.util.Arrays;
import java.util.Map;
import java.util.OptionalInt;

/**
 * Builds the fused operator from a PyTorch {@code state_dict} saved as safetensors (keys
 * {@code conv_transpose.weight}, {@code conv_transpose.bias}, {@code scale1}, {@code bias},
 * {@code scale2}). Hyper-parameters come from the caller's settings, else from the file's
 * {@code __metadata__} ({@code stride}, {@code padding}, {@code output_padding}, {@code pool_kernel}),
 * else from the reference configuration (stride 2, padding 1, output_padding 0, pool 2); a setting that
 * contradicts the metadata is an error. Stateless.
 */
public final class FusedModel {
  public static final String KEY_WEIGHT = "conv_transpose.weight";
  public static final String KEY_CONV_BIAS = "conv_transpose.bias";
  public static final String KEY_SCALE1 = "scale1";
  public static final String KEY_BIAS = "bias";
  public static final String KEY_SCALE2 = "scale2";

  public static final int DEFAULT_STRIDE = 2;
  public static final int DEFAULT_PADDING = 1;
  public static final int DEFAULT_OUTPUT_PADDING = 0;
  public static final int DEFAULT_POOL_KERNEL = 2;

  /** Hyper-parameters as the user set them; empty means "not set". */
  public record Params(OptionalInt stride, OptionalInt padding, OptionalInt outputPadding, OptionalInt poolKernel) {
    public static Params unset() {
      return new Params(OptionalInt.empty(), OptionalInt.empty(), OptionalInt.empty(), OptionalInt.empty());
    }
  }

  private FusedModel() {}

  /** The fused operator described by {@code file} and {@code params}. */
  public static FusedOp load(SafeTensors file, Params params) {
    String name = file.name();
    SafeTensors.Tensor w = file.require(KEY_WEIGHT);
    long[] ws = w.shape();
    if (ws.length != 5 || ws[2] != ws[3] || ws[3] != ws[4]) {
      throw new TensorFormatException(name + ": tensor '" + KEY_WEIGHT + "' must have shape [Cin, Cout, k, k, k] (a cubic kernel), got "
          + Arrays.toString(ws));
    }
    int cin = (int) ws[0];
    int cout = (int) ws[1];
    int k = (int) ws[2];
    SafeTensors.Tensor cb = file.require(KEY_CONV_BIAS);
    expectShape(name, KEY_CONV_BIAS, cb, new long[] {cout});
    SafeTensors.Tensor bias = file.require(KEY_BIAS);
    if (!Arrays.equals(bias.shape(), new long[] {cout, 1, 1, 1}) && !Arrays.equals(bias.shape(), new long[] {cout})) {
      throw new TensorFormatException(name + ": tensor '" + KEY_BIAS + "' must have shape [" + cout + ", 1, 1, 1] or ["
          + cout + "], got " + Arrays.toString(bias.shape()));
    }
    float s1 = scalar(name, KEY_SCALE1, file.require(KEY_SCALE1));
    float s2 = scalar(name, KEY_SCALE2, file.require(KEY_SCALE2));
    FusedWeights weights = new FusedWeights(cin, cout, k, w.values(), cb.values(), s1, bias.values(), s2);
    Map<String, String> meta = file.metadata();
    int stride = pick(name, "stride", params.stride(), meta, DEFAULT_STRIDE);
    int padding = pick(name, "padding", params.padding(), meta, DEFAULT_PADDING);
    int outputPadding = pick(name, "output_padding", params.outputPadding(), meta, DEFAULT_OUTPUT_PADDING);
    int pool = pick(name, "pool_kernel", params.poolKernel(), meta, DEFAULT_POOL_KERNEL);
    return new FusedOp(stride, padding, outputPadding, pool, weights);
  }

  private static void expectShape(String name, String key, SafeTensors.Tensor t, long[] want) {
    if (!Arrays.equals(t.shape(), want)) {
      throw new TensorFormatException(name + ": tensor '" + key + "' must have shape " + Arrays.toString(want) + ", got "
          + Arrays.toString(t.shape()));
    }
  }

  private static float scalar(String name, String key, SafeTensors.Tensor t) {
    if (t.numel() != 1) {
      throw new TensorFormatException(name + ": tensor '" + key + "' must be a scalar (0-d), got shape "
          + Arrays.toString(t.shape()));
    }
    return t.values()[0];
  }

  private static int pick(String name, String key, OptionalInt setting, Map<String, String> meta, int dflt) {
    String m = meta.get(key);
    Integer fromMeta = null;
    if (m != null) {
      try {
        fromMeta = Integer.parseInt(m.trim());
      } catch (NumberFormatException e) {
        throw new TensorFormatException(name + ": __metadata__ entry '" + key + "' must be an integer, got '" + m + "'");
      }
    }
    if (setting.isPresent()) {
      if (fromMeta != null && fromMeta != setting.getAsInt()) {
        throw new IllegalArgumentException("fused: setting " + key + "=" + setting.getAsInt() + " contradicts the model file "
            + name + " whose __metadata__ says " + key + "=" + fromMeta + "; drop the setting or fix the file");
      }
      return setting.getAsInt();
    }
    return fromMeta != null ? fromMeta : dflt;
  }
}
