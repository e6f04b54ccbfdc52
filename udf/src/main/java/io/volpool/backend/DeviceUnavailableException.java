package io.volpool.backend;

import io.volpool.conf.VolpoolOptions;

/**
 * {@code spark.volpool.device=gpu} on a JVM without a usable CUDA GPU. It is the environment (no
 * driver, no device, an old driver), not the data and not a passing fault: the job ends with exit 4,
 * which schedulers do not retry. The message is the same in every task of the JVM.
 */
public final class DeviceUnavailableException extends IllegalStateException implements io.volpool.conf.VolpoolFailure {
  private static final long serialVersionUID = 1L;
  /** What the driver says after the failure's line (also when it found the failure only by its text). */
  public static final String ADVICE = "nothing was written; run on a host with an NVIDIA GPU and driver (see docs/gpus.md),"
      + " or set " + VolpoolOptions.DEVICE.key() + "=auto or cpu";

  /** The same one line in every task of a JVM; the environment, not the data: a retry cannot help. */
  @Override
  public io.volpool.conf.ExitCode exit() {
    return io.volpool.conf.ExitCode.ENVIRONMENT;
  }

  @Override
  public String advice() {
    return ADVICE;
  }
  /** Every message starts so; the driver finds it in a task failure's text, where only the text survives. */
  public static final String PREFIX = VolpoolOptions.DEVICE.key() + "=gpu but no usable CUDA GPU: ";

  public DeviceUnavailableException(String reason, Throwable cause) {
    super(PREFIX + reason + ". Set " + VolpoolOptions.DEVICE.key() + "=auto to fall back to the CPU.", cause);
  }
}
