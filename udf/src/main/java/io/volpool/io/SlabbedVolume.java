package io.volpool.io;

import io.volpool.op.VolumeShape;
import java.io.Serializable;

/**
 * A volume that one task runs in slabs along D, planned on the driver: the whole volume, or a range
 * of its output planes when the volume is spread over several tasks. A volume stored across rows
 * ({@link PlaneVolume}) or one in a C-order .npy file ({@link io.volpool.io.npy.NpyRange}).
 */
public interface SlabbedVolume extends Serializable {
  /** The whole volume's shape. */
  VolumeShape shape();

  /** The output planes {@code {from, to}} this entry runs, or null for all of them. */
  int[] outputPlanes();

  /** The record name in errors and logs, with the output planes of a range. */
  String record();

  /** Input bytes (as float32) the entry reads, its halo included: what the planner packs tasks by. */
  long bytes();
}
