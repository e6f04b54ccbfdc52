package io.volpool.op;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.fused.FusedOp;
import io.volpool.ops.fused.FusedStencil;
import io.volpool.ops.fused.FusedWeights;

import io.volpool.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Shape arithmetic and validation as PyTorch does them, with messages a user understands. */
class ShapeRulesTest {
  @Test
  void everyGoldenCaseHasTheExpectedShape() {
    for (Golden.Case c : Golden.cases()) {
      VolumeShape out = c.pipeline().outputShape(c.volumeShape());
      long[] e = c.expected().shape();
      assertThat(new long[] {out.c(), out.d(), out.h(), out.w()}).as(c.name()).containsExactly(e[1], e[2], e[3], e[4]);
    }
  }

  @Test
  void referenceConfiguration() {
    FusedOp f = Golden.get("fused_seed").fused();
    assertThat(f.outputShape(new VolumeShape(3, 16, 32, 32))).isEqualTo(new VolumeShape(16, 15, 31, 31));
    assertThat(new AvgPool3dSpec(3, 2, 1, false, true).outputShape(new VolumeShape(32, 128, 128, 256)))
        .isEqualTo(new VolumeShape(32, 64, 64, 128));
  }

  @ParameterizedTest
  @CsvSource({"10,3,2,1,false,5", "10,3,2,1,true,6", "9,3,2,1,true,5", "8,2,2,0,true,4", "5,5,3,2,true,3", "7,3,2,1,true,4", "1,1,1,0,false,1"})
  void poolLengthMatchesPyTorch(int in, int k, int s, int p, boolean ceil, int out) {
    assertThat(PoolMath.outputLength(in, k, s, p, ceil)).isEqualTo(out);
  }

  @Test
  void rejectsPaddingOverHalfKernel() {
    assertThatThrownBy(() -> new AvgPool3dSpec(3, 2, 2, false, true))
        .hasMessage("avgpool3d: padding should be at most half of kernel_size (as in PyTorch), got padding=2 and kernel_size=3");
  }

  @Test
  void rejectsTooSmallInput() {
    assertThatThrownBy(() -> new AvgPool3dSpec(3, 1, 0, false, true).outputShape(new VolumeShape(1, 2, 8, 8)))
        .hasMessageContaining("input [1, 2, 8, 8] is too small for kernel_size=3")
        .hasMessageContaining("calculated output size [1, 0, 6, 6]");
  }

  @Test
  void rejectsOutputPaddingNotBelowStride() {
    FusedWeights w = Golden.get("fused_seed").fused().weights();
    assertThatThrownBy(() -> new FusedOp(2, 1, 2, 2, w))
        .hasMessageContaining("output_padding must be non-negative and smaller than stride")
        .hasMessageContaining("got output_padding=2 and stride=2");
  }

  @Test
  void rejectsChannelMismatch() {
    FusedOp f = Golden.get("fused_seed").fused();
    assertThatThrownBy(() -> f.outputShape(new VolumeShape(4, 16, 32, 32)))
        .hasMessageContaining("input has 4 channels but the model's conv_transpose expects 3");
  }

  @Test
  void rejectsConvOutputSmallerThanPool() {
    FusedOp f = Golden.get("fused_seed").fused();
    assertThatThrownBy(() -> f.outputShape(new VolumeShape(3, 1, 8, 8)))
        .hasMessageContaining("smaller than pool_kernel=2");
  }

  @Test
  void pipelineNamesTheRejectingStage() {
    Pipeline p = Pipeline.of(Golden.get("fused_seed").fused(), new AvgPool3dSpec(3, 2, 1, false, true));
    assertThat(p.describe()).isEqualTo("fused,avgpool3d");
    assertThat(Pipeline.of().describe()).isEqualTo("identity");
    assertThat(p.outputShape(new VolumeShape(3, 16, 32, 32))).isEqualTo(new VolumeShape(16, 8, 16, 16));
  }

  @Test
  void stencilOfReferenceConfigIsTwoTapsPerDimension() {
    FusedStencil st = FusedStencil.of(Golden.get("fused_seed").fused(), new VolumeShape(3, 16, 32, 32));
    for (FusedStencil.Dim d : new FusedStencil.Dim[] {st.d(), st.h(), st.w()}) {
      assertThat(d.patterns()).isEqualTo(1);
      assertThat(d.taps).isEqualTo(2);
      assertThat(d.offset[0]).containsExactly(0, 1);
    }
    assertThat(st.comboSize()).isEqualTo(3 * 8 * 16);
  }
}
