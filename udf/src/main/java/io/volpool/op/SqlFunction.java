package io.volpool.op;

import java.io.IOException;
import java.util.List;

/**
 * A SQL function running one operator on a volume: {@code name(data, shape, dtype, params...)} returning
 * {@code struct<shape: array<int>, dtype: string, data: binary>}. Registered by the job for every operator.
 */
public record SqlFunction(String name, List<String> params, String doc, Builder builder) {
  public SqlFunction {
    params = List.copyOf(params);
  }

  /** Builds the stage from the call's arguments (after {@code data, shape, dtype}). */
  @FunctionalInterface
  public interface Builder {
    Stage build(Args args) throws IOException;
  }

  /** The arguments of one call, checked as they are read: errors name the function and the parameter. */
  public interface Args {
    int intArg(int i);

    boolean boolArg(int i);

    String stringArg(int i);

    /** The bytes of the file at {@code path} (a Hadoop path), after {@code check} accepted its head. */
    byte[] readFile(String path, OperatorInputs.HeadCheck check) throws IOException;
  }

  /** The call's signature for docs, e.g. {@code volpool_maxpool3d(data, shape, dtype, kernel_size, stride, padding)}. */
  public String signature() {
    return name + "(data, shape, dtype" + (params.isEmpty() ? "" : ", " + String.join(", ", params)) + ")";
  }
}
