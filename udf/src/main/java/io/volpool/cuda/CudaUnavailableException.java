package io.volpool.cuda;

/** No usable CUDA device in this JVM; the message says why and what would fix it. */
public class CudaUnavailableException extends Exception {
  private static final long serialVersionUID = 1L;

  public CudaUnavailableException(String message) {
    super(message);
  }

  public CudaUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
