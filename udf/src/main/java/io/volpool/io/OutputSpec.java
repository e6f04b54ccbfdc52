package io.volpool.io;

import java.io.Serializable;
import java.util.List;
import java.util.Map;

/**
 * What a task writes, decided once on the driver: the format, the Parquet schema and codec, the
 * pass-through columns and the key-value metadata (provenance) every output file's footer records.
 * Small and serializable: it travels to executors in the output job's configuration.
 *
 * @param format {@code parquet} or {@code npy}
 * @param schema the output Parquet schema as text (pass-through columns, then shape, dtype, data)
 * @param passthrough the input columns copied to the output, in order
 * @param codec Parquet codec name ({@code UNCOMPRESSED}, {@code SNAPPY}, ...)
 * @param rowGroupBytes the Parquet writer's row-group size hint (volpool writes one row group per batch)
 * @param metadata key-value metadata written into every Parquet footer
 * @param rowBytes with volumes stored across rows (the schema has {@code d0}/{@code d1}), the most data per row
 * @param npyRanges how .npy output takes ranges of a volume's planes from several tasks (or a volume run in slabs):
 *     by position into the staged file (POSIX), as parts joined by concat (HDFS), or not at all
 *     ({@link io.volpool.io.npy.NpyPlanesInPlace})
 */
public record OutputSpec(io.volpool.conf.FileFormat format, String schema, List<String> passthrough, String codec, long rowGroupBytes,
    Map<String, String> metadata, long rowBytes, io.volpool.io.npy.NpyPlanesInPlace.Mode npyRanges) implements Serializable {
  /** Whether .npy output takes a volume's planes from several tasks (volumes may then be spread). */
  public boolean npyInPlace() {
    return isNpy() && npyRanges != io.volpool.io.npy.NpyPlanesInPlace.Mode.NONE;
  }

  public boolean isNpy() {
    return format == io.volpool.conf.FileFormat.NPY;
  }
}
