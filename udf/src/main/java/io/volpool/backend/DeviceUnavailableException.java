package io.volpool.backend;

import io.volpool.conf.VolpoolOptions;

/**
 * {@code spark.volpool.device=gpu} on a JVM without a usable CUDA GPU. It is the environment (no
 * driver, no device, an old driver), not the data and not a passing fault: the job ends with exit 4,
 * which schedulers do not retry. The message is the same in every task of the JVM.
 */
public final class DeviceUnavailableException extends IllegalStateException {
  private static final long serialVersionUID = 1L;
  /** Every message starts so; the driver finds it in a task failure's text, where only the text survives. */
  public static final String PREFIX = VolpoolOptions.DEVICE.key() + "=gpu but no usable CUDA GPU: ";

  public DeviceUnavailableException(String reason, Throwable cause) {
    super(PREFIX + reason + ". Set " + VolpoolOptions.DEVICE.key() + "=auto to fall back to the CPU.", cause);
  }
}
