package io.volpool.op;

import io.volpool.format.Dtype;
import io.volpool.format.Narrow;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * An ordered list of stages applied to each volume; an empty pipeline copies volumes through
 * (identity). Stages compute in float32; {@code output} is the dtype the results are stored in
 * ({@link Dtype#FLOAT32}, or narrowed to {@link Dtype#FLOAT16} / {@link Dtype#BFLOAT16} as the
 * last step, on the device, by {@link io.volpool.format.Narrow}'s rules).
 */
public record Pipeline(List<Stage> stages, Dtype output) implements Serializable {
  public Pipeline {
    stages = List.copyOf(stages);
    if (!Narrow.isOutput(output)) {
      throw new IllegalArgumentException("output dtype " + output.numpyName() + ": an output is " + Narrow.OUTPUT_DTYPES);
    }
  }

  /** Stages with float32 output. */
  public Pipeline(List<Stage> stages) {
    this(stages, Dtype.FLOAT32);
  }

  /** The same stages, storing results as {@code dtype}. */
  public Pipeline withOutput(Dtype dtype) {
    return new Pipeline(stages, dtype);
  }

  /** Bytes of one output volume of {@code out}'s shape in the output dtype. */
  public long outputBytes(VolumeShape out) {
    return out.numel() * output.itemSize();
  }

  /** True when the results are narrowed from float32. */
  public boolean narrows() {
    return output != Dtype.FLOAT32;
  }

  public static Pipeline of(Stage... stages) {
    return new Pipeline(List.of(stages));
  }

  /** Output shape after every stage; the error names the stage that rejects the shape. */
  public VolumeShape outputShape(VolumeShape in) {
    VolumeShape s = in;
    for (Stage st : stages) {
      s = st.outputShape(s);
    }
    return s;
  }

  /** The shape entering each stage, then the final output shape (stages().size()+1 entries). */
  public List<VolumeShape> shapes(VolumeShape in) {
    List<VolumeShape> out = new ArrayList<>();
    out.add(in);
    VolumeShape s = in;
    for (Stage st : stages) {
      s = st.outputShape(s);
      out.add(s);
    }
    return out;
  }

  /** The names joined by commas, as in {@code spark.volpool.pipeline}. */
  public String describe() {
    return stages.isEmpty() ? "identity" : stages.stream().map(Stage::name).collect(Collectors.joining(","));
  }
}
