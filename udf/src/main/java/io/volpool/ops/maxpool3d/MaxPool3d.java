package io.volpool.ops.maxpool3d;

import io.volpool.conf.ConfKey;
import io.volpool.conf.SettingsException;
import io.volpool.conf.VolpoolOptions;
import io.volpool.op.Operator;
import io.volpool.op.OperatorInputs;
import io.volpool.op.SqlFunction;
import io.volpool.op.Stage;
import java.util.List;

/** The maxpool3d operator: its settings, its SQL functions, and how they become a {@link MaxPool3dSpec}. */
public final class MaxPool3d implements Operator {
  public static final MaxPool3d OPERATOR = new MaxPool3d();

  private static final String P = VolpoolOptions.PREFIX + MaxPool3dSpec.NAME + ".";
  /** Its settings, added as they are declared. */
  private static final ConfKey.Declared KEYS = new ConfKey.Declared();
  public static final ConfKey<Integer> KERNEL = KEYS.add(ConfKey.integer(P + "kernelSize", null, 1, Integer.MAX_VALUE,
      "MaxPool3d kernel_size. Required when the pipeline has `maxpool3d` (PyTorch has no default)."));
  public static final ConfKey<Integer> STRIDE = KEYS.add(ConfKey.integer(P + "stride", null, 1, Integer.MAX_VALUE,
      "MaxPool3d stride; unset: the kernel size (as in PyTorch)."));
  public static final ConfKey<Integer> PADDING = KEYS.add(ConfKey.integer(P + "padding", "0", 0, Integer.MAX_VALUE,
      "MaxPool3d padding (at most half the kernel); padded cells never win."));
  public static final ConfKey<Integer> DILATION = KEYS.add(ConfKey.integer(P + "dilation", "1", 1, Integer.MAX_VALUE,
      "MaxPool3d dilation: the window's cells are this far apart."));
  public static final ConfKey<Boolean> CEIL = KEYS.add(ConfKey.bool(P + "ceilMode", "false", "MaxPool3d ceil_mode."));

  private MaxPool3d() {}

  @Override
  public String name() {
    return MaxPool3dSpec.NAME;
  }

  @Override
  public String summary() {
    return "`torch.nn.MaxPool3d(kernel_size, stride, padding, dilation, ceil_mode)`, the same value in D, H and W; a NaN"
        + " in a window gives NaN, as in PyTorch.";
  }

  @Override
  public List<ConfKey<?>> settings() {
    return KEYS.all();
  }

  @Override
  public Stage fromSettings(OperatorInputs in) {
    Integer k = KERNEL.get(in.values());
    if (k == null) {
      throw new SettingsException("missing setting " + KERNEL.key() + ": the pipeline has maxpool3d, whose kernel_size"
          + " has no default (as in PyTorch's MaxPool3d)");
    }
    Integer s = STRIDE.get(in.values());
    try {
      return new MaxPool3dSpec(k, s == null ? k : s, PADDING.get(in.values()), DILATION.get(in.values()),
          CEIL.get(in.values()));
    } catch (IllegalArgumentException e) {
      throw new SettingsException(P + "*: " + e.getMessage(), e);
    }
  }

  @Override
  public List<SqlFunction> sqlFunctions() {
    return List.of(
        new SqlFunction("volpool_maxpool3d", List.of("kernel_size", "stride", "padding"),
            "MaxPool3d with dilation 1 and ceil_mode false.",
            a -> new MaxPool3dSpec(a.intArg(0), a.intArg(1), a.intArg(2), 1, false)),
        new SqlFunction("volpool_maxpool3d_full", List.of("kernel_size", "stride", "padding", "dilation", "ceil_mode"),
            "MaxPool3d with every parameter.",
            a -> new MaxPool3dSpec(a.intArg(0), a.intArg(1), a.intArg(2), a.intArg(3), a.boolArg(4))));
  }
}
