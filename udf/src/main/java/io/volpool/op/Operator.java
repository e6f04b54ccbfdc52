package io.volpool.op;

import io.volpool.conf.ConfKey;
import java.util.List;

/**
 * One operator as the job and SQL know it: its name, its settings (declared in its own package,
 * under {@code spark.volpool.<name>.}), how those settings and a SQL call become a {@link Stage},
 * and its SQL functions. Listed once in {@code io.volpool.ops.Operators}; the settings, the SQL
 * registration and the README iterate that list. Stateless.
 */
public interface Operator {
  /** The stage name in {@code spark.volpool.pipeline}, e.g. {@code maxpool3d}. */
  String name();

  /** One line for the README: what it computes, in PyTorch's terms. */
  String summary();

  /** Its settings, each declared once in the operator's package. */
  List<ConfKey<?>> settings();

  /**
   * The stage its settings describe.
   *
   * @throws io.volpool.conf.SettingsException naming the key and the rule when a setting is wrong
   * @throws java.io.IOException when a file a setting names cannot be read
   */
  Stage fromSettings(OperatorInputs in) throws java.io.IOException;

  /** Its SQL functions (each taking {@code data, shape} first, then the function's own arguments). */
  List<SqlFunction> sqlFunctions();
}
