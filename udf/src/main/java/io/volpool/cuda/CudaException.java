package io.volpool.cuda;

/** A CUDA driver call failed: the message names the call, the driver's error name, text and code. */
public class CudaException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int code;

  public CudaException(String message, int code) {
    super(message);
    this.code = code;
  }

  public int code() {
    return code;
  }
}
