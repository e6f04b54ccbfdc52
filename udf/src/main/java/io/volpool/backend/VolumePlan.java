package io.volpool.backend;

/**
 * How a backend runs volumes of one shape through one pipeline, decided once by
 * {@link Backend#plan}: whole, in batches of up to {@code batch} volumes, or one at a time in
 * slabs of {@code slabPlanes} output planes along D (when one volume is larger than a batch may be).
 *
 * @param batch volumes per batch; 1 when slabbed
 * @param slabPlanes output planes per slab, or 0 for whole volumes
 * @param why one line for the log: what decided it
 */
public record VolumePlan(int batch, int slabPlanes, String why) {
  public VolumePlan {
    if (batch < 1 || slabPlanes < 0) {
      throw new IllegalArgumentException("a plan needs a batch of at least 1 and slabs of 0 or more planes, got "
          + batch + " and " + slabPlanes);
    }
  }

  public static VolumePlan whole(int batch, String why) {
    return new VolumePlan(batch, 0, why);
  }

  public static VolumePlan slabs(int planes, String why) {
    return new VolumePlan(1, planes, why);
  }

  public boolean slabbed() {
    return slabPlanes > 0;
  }
}
