package io.volpool.io.npy;

import io.volpool.io.SlabbedVolume;
import io.volpool.op.VolumeShape;

/**
 * A range of the output planes of one volume of a C-order .npy file, planned on the driver for a
 * volume larger than a task: the task reads by position only the input planes its range's slabs
 * read (its halo included) and writes its output planes as rows. The ranges of a volume tile its
 * output planes; the one from plane 0 counts the volume as read.
 *
 * @param file the .npy file
 * @param index the volume's index in the file (0 for a file of one volume)
 * @param batched whether the file holds a batch {@code [N, C, D, H, W]} (records then name the index)
 * @param shape the volume's shape
 * @param outFrom the first output plane of the range
 * @param outTo the output plane after the range's last
 * @param inFrom the first input plane the range reads
 * @param inTo the input plane after the last one it reads
 */
public record NpyRange(NpyFileRef file, int index, boolean batched, VolumeShape shape, int outFrom, int outTo, int inFrom, int inTo)
    implements SlabbedVolume {
  @Override
  public int[] outputPlanes() {
    return new int[] {outFrom, outTo};
  }

  /** Whether this range counts its volume as read (the one from output plane 0). */
  public boolean counts() {
    return outFrom == 0;
  }

  @Override
  public String record() {
    return file.path() + (batched ? "[" + index + "]" : "") + " output planes [" + outFrom + ", " + outTo + ")";
  }

  @Override
  public long bytes() {
    return (long) shape.c() * (inTo - inFrom) * shape.h() * shape.w() * Float.BYTES;
  }
}
