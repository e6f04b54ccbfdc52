package io.volpool.cuda;

/**
 * Maps the GPU address Spark assigned to a task (from {@code TaskContext.resources().get("gpu")})
 * to a CUDA device ordinal. Spark's discovery script reports physical ids; when
 * {@code CUDA_VISIBLE_DEVICES} is set, CUDA renumbers the visible devices from 0, so the address
 * is looked up in that list. Stateless.
 */
public final class DeviceAssignment {
  private DeviceAssignment() {}

  /**
   * @param address the task's GPU address, or null when Spark assigned none (local mode: device 0)
   * @param visibleDevices the value of CUDA_VISIBLE_DEVICES, or null
   * @param deviceCount devices CUDA reports
   * @throws IllegalStateException when the address names no visible device
   */
  public static int ordinal(String address, String visibleDevices, int deviceCount) {
    if (address == null || address.isBlank()) {
      return 0;
    }
    String a = address.trim();
    if (visibleDevices != null && !visibleDevices.isBlank()) {
      String[] ids = visibleDevices.split(",");
      for (int i = 0; i < ids.length; i++) {
        if (ids[i].trim().equals(a)) {
          return checked(i, a, visibleDevices, deviceCount);
        }
      }
      if (ids.length == 1 && deviceCount == 1) {
        // the cluster manager already isolated one GPU and renumbered it
        return 0;
      }
      throw new IllegalStateException("Spark assigned GPU address '" + a + "' but CUDA_VISIBLE_DEVICES='" + visibleDevices
          + "' does not list it; check the executor's GPU discovery script and the cluster's GPU isolation");
    }
    int ord;
    try {
      ord = Integer.parseInt(a);
    } catch (NumberFormatException e) {
      throw new IllegalStateException("Spark assigned GPU address '" + a + "', which is not a device number;"
          + " the GPU discovery script must report CUDA device indices (e.g. nvidia-smi --query-gpu=index)");
    }
    return checked(ord, a, visibleDevices, deviceCount);
  }

  private static int checked(int ord, String address, String visible, int count) {
    if (ord < 0 || ord >= count) {
      throw new IllegalStateException("Spark assigned GPU address '" + address + "' (CUDA device " + ord + ") but CUDA sees "
          + count + " device(s)" + (visible == null ? "" : " with CUDA_VISIBLE_DEVICES='" + visible + "'"));
    }
    return ord;
  }
}
