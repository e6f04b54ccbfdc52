package io.volpool.spark;

import io.volpool.op.VolumeShape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.apache.spark.sql.Row;

/** One Parquet row seen as a volume, validated against the rules of its {@link TensorLayout}. */
final class RowVolume implements VolumeSource {
  private final Row row;
  private final TensorLayout layout;
  private final String record;
  private VolumeShape shape;

  RowVolume(Row row, TensorLayout layout, long rowInPartition, int partition) {
    this.row = row;
    this.layout = layout;
    int id = layout.idIndex();
    this.record = id >= 0 && !row.isNullAt(id) ? "id=" + row.get(id)
        : "row " + rowInPartition + " of partition " + partition;
  }

  Row row() {
    return row;
  }

  @Override
  public String record() {
    return record;
  }

  @Override
  public VolumeShape shape() {
    if (shape == null) {
      shape = layout.isBinary() ? binaryShape() : tensorShape();
    }
    return shape;
  }

  private VolumeShape binaryShape() {
    if (row.isNullAt(layout.shapeIndex())) {
      throw new BadRecordException(record, "shape is null; every row needs shape [C, D, H, W]");
    }
    List<Object> dims = row.getList(layout.shapeIndex());
    if (dims.size() != 4) {
      throw new BadRecordException(record, "shape must have 4 dimensions [C, D, H, W], got " + dims);
    }
    int[] d = new int[4];
    for (int i = 0; i < 4; i++) {
      Object v = dims.get(i);
      if (v == null || ((Number) v).longValue() <= 0 || ((Number) v).longValue() > Integer.MAX_VALUE) {
        throw new BadRecordException(record, "shape must have 4 positive dimensions [C, D, H, W], got " + dims);
      }
      d[i] = ((Number) v).intValue();
    }
    VolumeShape s = VolumeShape.of(d);
    String dtype = row.isNullAt(layout.dtypeIndex()) ? null : row.getString(layout.dtypeIndex());
    if (!"float32".equals(dtype) && !"<f4".equals(dtype)) {
      throw new BadRecordException(record, "dtype must be 'float32' (or '<f4'), got " + (dtype == null ? "null" : "'" + dtype + "'"));
    }
    if (row.isNullAt(layout.dataIndex())) {
      throw new BadRecordException(record, "data is null");
    }
    int len = ((byte[]) row.get(layout.dataIndex())).length;
    if (len != s.bytes()) {
      throw new BadRecordException(record, "data holds " + len + " bytes but shape " + s + " of float32 needs "
          + s.bytes() + " (shape x 4 bytes)");
    }
    return s;
  }

  private VolumeShape tensorShape() {
    VolumeShape s = layout.fixedShape();
    if (row.isNullAt(layout.tensorIndex())) {
      throw new BadRecordException(record, "tensor column '" + layout.tensorColumn() + "' is null");
    }
    int len = row.getList(layout.tensorIndex()).size();
    if (len != s.numel()) {
      throw new BadRecordException(record, "tensor column '" + layout.tensorColumn() + "' holds " + len
          + " floats but its fixed shape " + s + " needs " + s.numel());
    }
    return s;
  }

  @Override
  public void copyTo(ByteBuffer dst) {
    shape();
    if (layout.isBinary()) {
      dst.put((byte[]) row.get(layout.dataIndex()));
    } else {
      List<Object> vals = row.getList(layout.tensorIndex());
      ByteBuffer d = dst.order(ByteOrder.LITTLE_ENDIAN);
      int i = 0;
      for (Object v : vals) {
        if (v == null) {
          throw new BadRecordException(record, "tensor column '" + layout.tensorColumn() + "' has a null at element " + i);
        }
        d.putFloat((Float) v);
        i++;
      }
    }
  }
}
