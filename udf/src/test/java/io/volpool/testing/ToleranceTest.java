package io.volpool.testing;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The golden comparison itself must catch what it is meant to catch. */
class ToleranceTest {
  @Test
  void acceptsRoundingAndRejectsRealErrors() {
    float[] ref = {1f, -2f, 3f, 1000f};
    assertThatCode(() -> Tolerance.assertClose(new float[] {1f, -2f, 3.0000002f, 1000.0001f}, ref, "ok"))
        .doesNotThrowAnyException();
    assertThatThrownBy(() -> Tolerance.assertClose(new float[] {1f, -2.001f, 3f, 1000f}, ref, "off"))
        .hasMessageContaining("first at flat index 1").hasMessageContaining("got -2.001").hasMessageContaining("expected -2.0");
    assertThatThrownBy(() -> Tolerance.assertClose(new float[] {1f, Float.NaN, 3f, 1000f}, ref, "nan"))
        .hasMessageContaining("first at flat index 1");
    assertThatThrownBy(() -> Tolerance.assertClose(new float[] {1f, -2f, 3f}, ref, "short")).hasMessageContaining("3 values");
  }

  @Test
  void nonFiniteReferencesMustBeMatchedExactly() {
    float inf = Float.POSITIVE_INFINITY;
    float[] ref = {1f, Float.NaN, -inf, inf};
    assertThatCode(() -> Tolerance.assertClose(new float[] {1f, Float.NaN, -inf, inf}, ref, "same")).doesNotThrowAnyException();
    assertThatThrownBy(() -> Tolerance.assertClose(new float[] {1f, 0f, -inf, inf}, ref, "lost nan"))
        .hasMessageContaining("first at flat index 1");
    assertThatThrownBy(() -> Tolerance.assertClose(new float[] {1f, Float.NaN, -3.4e38f, inf}, ref, "finite for -inf"))
        .hasMessageContaining("first at flat index 2");
    assertThatThrownBy(() -> Tolerance.assertClose(new float[] {1f, Float.NaN, -inf, -inf}, ref, "wrong sign"))
        .hasMessageContaining("first at flat index 3");
  }
}
