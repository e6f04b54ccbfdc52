package io.volpool.op;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/** An ordered list of stages applied to each volume; an empty pipeline copies volumes through (identity). */
public record Pipeline(List<Stage> stages) implements Serializable {
  public Pipeline {
    stages = List.copyOf(stages);
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
