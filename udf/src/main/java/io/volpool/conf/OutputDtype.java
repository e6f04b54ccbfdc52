package io.volpool.conf;

/**
 * The dtype output volumes are stored in ({@link VolpoolOptions#OUTPUT_DTYPE}): the kernels compute
 * in float32 and narrow on the device; {@code io.volpool.format.Dtype} of the same name says how.
 */
public enum OutputDtype {
  FLOAT32,
  FLOAT16,
  BFLOAT16;

  @Override
  public String toString() {
    return ConfKey.name(this);
  }
}
