package io.volpool.conf;

/** Where the kernels run ({@link VolpoolOptions#DEVICE}). */
public enum Device {
  /** The GPU when CUDA works, else the CPU, logging why. */
  AUTO,
  CPU,
  /** The GPU; fails (exit 4) without a usable one. */
  GPU;

  @Override
  public String toString() {
    return ConfKey.name(this);
  }
}
