package io.volpool.format;

/** Raised when bytes claimed to be a tensor (an .npy file, a safetensors file, a Parquet row) break a rule of the format. */
public class TensorFormatException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public TensorFormatException(String message) {
    super(message);
  }

  public TensorFormatException(String message, Throwable cause) {
    super(message, cause);
  }
}
