package io.volpool.ops.fused;

import io.volpool.conf.ConfKey;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import io.volpool.format.SafeTensors;
import io.volpool.op.Operator;
import io.volpool.op.OperatorInputs;
import io.volpool.op.SqlFunction;
import io.volpool.op.Stage;
import java.io.IOException;
import java.util.List;
import java.util.OptionalInt;

/** The fused operator: its settings, its SQL function, and how they load a model into a {@link FusedOp}. */
public final class Fused implements Operator {
  public static final Fused OPERATOR = new Fused();

  private static final String P = VolpoolOptions.PREFIX + FusedOp.NAME + ".";
  /** Its settings, added as they are declared. */
  private static final ConfKey.Declared KEYS = new ConfKey.Declared();
  public static final ConfKey<String> WEIGHTS = KEYS.add(ConfKey.text(P + "weights", null,
      "safetensors file of the fused model's PyTorch `state_dict`. Required when the pipeline has `fused`."));
  public static final ConfKey<Integer> STRIDE = KEYS.add(ConfKey.integer(P + "stride", null, 1, Integer.MAX_VALUE,
      "ConvTranspose3d stride; unset: the model's `__metadata__`, else 2."));
  public static final ConfKey<Integer> PADDING = KEYS.add(ConfKey.integer(P + "padding", null, 0, Integer.MAX_VALUE,
      "ConvTranspose3d padding; unset: the model's `__metadata__`, else 1."));
  public static final ConfKey<Integer> OUTPUT_PADDING = KEYS.add(ConfKey.integer(P + "outputPadding", null, 0, Integer.MAX_VALUE,
      "ConvTranspose3d output_padding; unset: the model's `__metadata__`, else 0."));
  public static final ConfKey<Integer> POOL_KERNEL = KEYS.add(ConfKey.integer(P + "poolKernelSize", null, 1, Integer.MAX_VALUE,
      "AvgPool3d kernel_size (= stride) inside `fused`; unset: the model's `__metadata__`, else 2.")
      .formerly(P + "poolKernel"));

  private Fused() {}

  @Override
  public String name() {
    return FusedOp.NAME;
  }

  @Override
  public String summary() {
    return "`ConvTranspose3d` (with its bias) `* scale1`, `AvgPool3d(pool_kernel)`, `+ bias[c]`, `* scale2`, from a"
        + " PyTorch `state_dict` in safetensors.";
  }

  @Override
  public List<ConfKey<?>> settings() {
    return KEYS.all();
  }

  @Override
  public Stage fromSettings(OperatorInputs in) throws IOException {
    String path = WEIGHTS.get(in.values());
    byte[] bytes;
    try {
      bytes = in.readFile(WEIGHTS, "model", "the pipeline has a fused stage, which needs the model's safetensors file",
          (head, length) -> SafeTensors.checkHead(head, length, path));
    } catch (IllegalArgumentException e) {
      throw new SettingsException(WEIGHTS.key() + ": " + e.getMessage(), e);
    } catch (IOException e) {
      throw new IOException(WEIGHTS.is(path) + ": " + e.getMessage(), e);
    }
    FusedModel.Params params = new FusedModel.Params(optional(in, STRIDE), optional(in, PADDING),
        optional(in, OUTPUT_PADDING), optional(in, POOL_KERNEL));
    try {
      return FusedModel.load(SafeTensors.read(bytes, path), params);
    } catch (IllegalArgumentException e) {
      throw new SettingsException(WEIGHTS.key() + ": " + e.getMessage(), e);
    }
  }

  private static OptionalInt optional(OperatorInputs in, ConfKey<Integer> k) {
    Integer v = k.get(in.values());
    return v == null ? OptionalInt.empty() : OptionalInt.of(v);
  }

  @Override
  public List<SqlFunction> sqlFunctions() {
    return List.of(new SqlFunction("volpool_fused", List.of("model"),
        "The fused model in the safetensors file `model` (stride, padding and pool kernel from its metadata, else 2, 1, 2).",
        a -> {
          String path = a.stringArg(0);
          return FusedModel.load(SafeTensors.read(a.readFile(path, (head, length) -> SafeTensors.checkHead(head, length,
              path)), path), FusedModel.Params.unset());
        }));
  }
}
