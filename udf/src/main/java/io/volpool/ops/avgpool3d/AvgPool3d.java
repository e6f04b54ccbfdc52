package io.volpool.ops.avgpool3d;

import io.volpool.conf.ConfKey;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import io.volpool.op.Operator;
import io.volpool.op.OperatorInputs;
import io.volpool.op.SqlFunction;
import io.volpool.op.Stage;
import java.util.List;

/** The avgpool3d operator: its settings, its SQL functions, and how they become an {@link AvgPool3dSpec}. */
public final class AvgPool3d implements Operator {
  public static final AvgPool3d OPERATOR = new AvgPool3d();

  private static final String P = VolpoolOptions.PREFIX + AvgPool3dSpec.NAME + ".";
  /** Its settings, added as they are declared. */
  private static final ConfKey.Declared KEYS = new ConfKey.Declared();
  public static final ConfKey<Integer> KERNEL = KEYS.add(ConfKey.integer(P + "kernelSize", null, 1, Integer.MAX_VALUE,
      "AvgPool3d kernel_size. Required when the pipeline has `avgpool3d` (PyTorch has no default); the reference"
          + " pool is 3 with stride 2 and padding 1."));
  public static final ConfKey<Integer> STRIDE = KEYS.add(ConfKey.integer(P + "stride", null, 1, Integer.MAX_VALUE,
      "AvgPool3d stride; unset: the kernel size (as in PyTorch)."));
  public static final ConfKey<Integer> PADDING = KEYS.add(ConfKey.integer(P + "padding", "0", 0, Integer.MAX_VALUE,
      "AvgPool3d padding (at most half the kernel), as in PyTorch 0 unless set."));
  public static final ConfKey<Boolean> CEIL = KEYS.add(ConfKey.bool(P + "ceilMode", "false", "AvgPool3d ceil_mode."));
  public static final ConfKey<Boolean> COUNT_PAD = KEYS.add(ConfKey.bool(P + "countIncludePad", "true",
      "AvgPool3d count_include_pad."));

  private AvgPool3d() {}

  @Override
  public String name() {
    return AvgPool3dSpec.NAME;
  }

  @Override
  public String summary() {
    return "`torch.nn.AvgPool3d(kernel_size, stride, padding, ceil_mode, count_include_pad)`, the same value in D, H and W.";
  }

  @Override
  public List<ConfKey<?>> settings() {
    return KEYS.all();
  }

  @Override
  public Stage fromSettings(OperatorInputs in) {
    Integer k = KERNEL.get(in.values());
    if (k == null) {
      throw new SettingsException("missing setting " + KERNEL.key() + ": the pipeline has avgpool3d, whose kernel_size"
          + " has no default (as in PyTorch's AvgPool3d; the reference pool is " + KERNEL.key() + "=3, " + STRIDE.key()
          + "=2, " + PADDING.key() + "=1)");
    }
    Integer s = STRIDE.get(in.values());
    try {
      return new AvgPool3dSpec(k, s == null ? k : s, PADDING.get(in.values()), CEIL.get(in.values()),
          COUNT_PAD.get(in.values()));
    } catch (SettingsException e) {
      throw e;
    } catch (IllegalArgumentException e) {
      throw new SettingsException(P + "*: " + e.getMessage(), e);
    }
  }

  @Override
  public List<SqlFunction> sqlFunctions() {
    return List.of(
        new SqlFunction("volpool_avgpool3d", List.of("kernel", "stride", "padding"),
            "AvgPool3d with ceil_mode false and count_include_pad true.",
            a -> new AvgPool3dSpec(a.intArg(0), a.intArg(1), a.intArg(2), false, true)),
        new SqlFunction("volpool_avgpool3d_full", List.of("kernel", "stride", "padding", "ceil_mode", "count_include_pad"),
            "AvgPool3d with every parameter.",
            a -> new AvgPool3dSpec(a.intArg(0), a.intArg(1), a.intArg(2), a.boolArg(3), a.boolArg(4))));
  }
}
