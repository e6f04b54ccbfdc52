package io.volpool.spark;

import io.volpool.op.VolumeShape;
import java.util.ArrayList;
import java.util.List;

/** Converts shapes to the value Spark's row encoder takes for an {@code array<int>} column (a Scala Seq). */
public final class Shapes {
  private Shapes() {}

  public static scala.collection.Seq<Integer> seq(VolumeShape s) {
    return seq(s.toArray());
  }

  public static scala.collection.Seq<Integer> seq(int... dims) {
    List<Integer> l = new ArrayList<>(dims.length);
    for (int d : dims) {
      l.add(d);
    }
    return scala.jdk.javaapi.CollectionConverters.asScala(l).toSeq();
  }
}
