package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class DeviceAssignmentTest {
  @Test
  void localModeUsesDeviceZero() {
    assertThat(DeviceAssignment.ordinal(null, null, 1)).isZero();
  }

  @Test
  void addressIsAnOrdinalWithoutVisibleDevices() {
    assertThat(DeviceAssignment.ordinal("3", null, 4)).isEqualTo(3);
  }

  @Test
  void addressIsLookedUpInCudaVisibleDevices() {
    assertThat(DeviceAssignment.ordinal("6", "4,6", 2)).isEqualTo(1);
    assertThat(DeviceAssignment.ordinal("5", "5", 1)).isZero();
  }

  @Test
  void unknownAddressesAreClearErrors() {
    assertThatThrownBy(() -> DeviceAssignment.ordinal("7", "4,6", 2)).hasMessageContaining("does not list it");
    assertThatThrownBy(() -> DeviceAssignment.ordinal("2", null, 1))
        .hasMessageContaining("GPU address '2' (CUDA device 2) but CUDA sees 1 device(s)");
    assertThatThrownBy(() -> DeviceAssignment.ordinal("GPU-abc", null, 1)).hasMessageContaining("not a device number");
  }
}
