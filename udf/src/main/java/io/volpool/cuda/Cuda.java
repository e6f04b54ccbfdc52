package io.volpool.cuda;

import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/** The one place where CUDA driver results are checked: every driver call of volpool goes through {@link #check}. */
public final class Cuda {
  private Cuda() {}

  /**
   * Throws {@link CudaException} naming {@code call} when {@code result} is not CUDA_SUCCESS.
   *
   * @param call what was attempted, e.g. {@code cuMemAlloc(512 MiB input buffer)}
   */
  public static void check(int result, String call) {
    if (result != CUresult.CUDA_SUCCESS) {
      String[] text = new String[1];
      String detail = "";
      try {
        if (JCudaDriver.cuGetErrorString(result, text) == CUresult.CUDA_SUCCESS && text[0] != null) {
          detail = ": " + text[0];
        }
      } catch (RuntimeException | LinkageError ignored) {
        // the name below is enough
      }
      throw new CudaException(call + " failed with " + CUresult.stringFor(result) + " (" + result + ")" + detail, result);
    }
  }
}
