package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.ops.fused.FusedOp;
import io.volpool.testing.Golden;
import io.volpool.testing.RandomData;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Which kernels the GPU runs, decided without a GPU. */
class KernelPlanTest {
  static final AvgPool3dSpec REF_POOL = new AvgPool3dSpec(3, 2, 1, false, true);
  static final VolumeShape REF = new VolumeShape(3, 16, 32, 32);

  @Test
  void referencePipelineIsOneKernelWithoutIntermediate() {
    KernelPlan p = KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), REF_POOL), REF);
    assertThat(p.describe()).isEqualTo("pipeline_taps2_c3_c16");
    assertThat(p.used(1)).as("intermediate buffer").isFalse();
    assertThat(p.outputBuffer()).isEqualTo(2);
  }

  @Test
  void referenceFusedAndPoolUseFastPaths() {
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused()), REF).describe()).isEqualTo("fused_taps2s1_c3_c16");
    assertThat(KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(32, 128, 128, 256)).describe())
        .isEqualTo("avgpool_k3s2p1");
  }

  @Test
  void nonUnitStepsUseTheGeneralTwoTapKernel() {
    FusedOp k1pool2 = RandomData.fused(new SplittableRandom(1), 3, 16, 1, 1, 0, 0, 2);
    assertThat(KernelPlan.of(Pipeline.of(k1pool2), new VolumeShape(3, 6, 8, 10)).describe()).isEqualTo("fused_taps2_c3_c16");
  }

  @Test
  void otherConfigurationsUseGenericKernels() {
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_k4s2p1").fused()), new VolumeShape(4, 6, 5, 7)).describe())
        .isEqualTo("fused_generic");
    assertThat(KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(3, 7, 9, 11)).describe()).isEqualTo("avgpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(3, 7, 9, 66)).describe())
        .as("W not a multiple of 4: no aligned 16-byte loads").isEqualTo("avgpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(new AvgPool3dSpec(5, 3, 2, false, true)), new VolumeShape(2, 9, 10, 12))
        .describe()).isEqualTo("avgpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), new AvgPool3dSpec(5, 3, 2, false, true)), REF)
        .describe()).isEqualTo("fused_taps2s1_c3_c16 -> avgpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(), REF).describe()).isEqualTo("copy");
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), REF_POOL), new VolumeShape(3, 16, 32, 30))
        .describe()).as("pipeline kernel needs 16-byte rows").isEqualTo("fused_taps2s1_c3_c16 -> avgpool_generic");
  }

  @Test
  void maxPoolUsesTheOneReadKernelWhereItApplies() {
    io.volpool.ops.maxpool3d.MaxPool3dSpec mk3 = new io.volpool.ops.maxpool3d.MaxPool3dSpec(3, 2, 1, 1, false);
    assertThat(KernelPlan.of(Pipeline.of(mk3), new VolumeShape(32, 128, 128, 256)).describe()).isEqualTo("maxpool_k3s2p1");
    assertThat(KernelPlan.of(Pipeline.of(new io.volpool.ops.maxpool3d.MaxPool3dSpec(3, 2, 1, 1, true)),
        new VolumeShape(2, 8, 10, 12)).describe()).as("ceil_mode changes only the output size").isEqualTo("maxpool_k3s2p1");
    assertThat(KernelPlan.of(Pipeline.of(mk3), new VolumeShape(3, 7, 9, 11)).describe()).isEqualTo("maxpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(new io.volpool.ops.maxpool3d.MaxPool3dSpec(3, 2, 1, 2, false)),
        new VolumeShape(3, 9, 9, 12)).describe()).as("dilation 2").isEqualTo("maxpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), mk3), new VolumeShape(3, 16, 32, 33)).describe())
        .as("fused then maxpool: the fused kernel, then the pool").isEqualTo("fused_taps2s1_c3_c16 -> maxpool_k3s2p1");
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), mk3), REF).describe())
        .as("the reference fused output is 31 wide, not a multiple of 4").isEqualTo("fused_taps2s1_c3_c16 -> maxpool_generic");
  }

  /** Each kernel's parameter count in volpool.cu (commas inside template brackets do not count). */
  static java.util.Map<String, Integer> kernelParameters() throws Exception {
    String cu;
    try (var in = KernelPlanTest.class.getResourceAsStream("/kernels/volpool.cu")) {
      cu = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
    java.util.Map<String, Integer> out = new java.util.HashMap<>();
    var m = java.util.regex.Pattern.compile("extern \"C\" __global__ void (?:__launch_bounds__\\([^)]*\\) )?(\\w+)\\(([^)]*)\\)")
        .matcher(cu);
    while (m.find()) {
      int depth = 0;
      int params = 1;
      for (char ch : m.group(2).toCharArray()) {
        depth += ch == '<' ? 1 : ch == '>' ? -1 : 0;
        params += ch == ',' && depth == 0 ? 1 : 0;
      }
      out.put(m.group(1), params);
    }
    return out;
  }

  /**
   * Every step of every plan, launched on paper: its arguments start with the input and output
   * buffers, are as many as its kernel declares in volpool.cu, and its grid is positive.
   */
  @Test
  void everyLaunchMatchesItsKernelsSignature() throws Exception {
    java.util.Map<String, Integer> declared = kernelParameters();
    assertThat(declared).containsKeys("fused_generic", "avgpool_k3s2p1", "maxpool_k3s2p1", "maxpool_generic",
        "pipeline_taps2_c3_c16");
    FusedOp ref = Golden.get("fused_seed").fused();
    FusedOp k1 = RandomData.fused(new SplittableRandom(1), 3, 16, 1, 1, 0, 0, 2);
    io.volpool.ops.maxpool3d.MaxPool3dSpec mk3 = new io.volpool.ops.maxpool3d.MaxPool3dSpec(3, 2, 1, 1, false);
    java.util.List<KernelPlan> plans = java.util.List.of(
        KernelPlan.of(Pipeline.of(ref, REF_POOL), REF),
        KernelPlan.of(Pipeline.of(ref), REF),
        KernelPlan.of(Pipeline.of(k1), new VolumeShape(3, 6, 8, 10)),
        KernelPlan.of(Pipeline.of(Golden.get("fused_k4s2p1").fused()), new VolumeShape(4, 6, 5, 7)),
        KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(3, 7, 9, 12)),
        KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(3, 7, 9, 11)),
        KernelPlan.of(Pipeline.of(mk3), new VolumeShape(3, 7, 9, 12)),
        KernelPlan.of(Pipeline.of(new io.volpool.ops.maxpool3d.MaxPool3dSpec(2, 1, 1, 2, true)), new VolumeShape(3, 7, 9, 11)));
    java.util.Set<String> seen = new java.util.TreeSet<>();
    for (KernelPlan p : plans) {
      for (io.volpool.op.GpuStep st : p.steps()) {
        io.volpool.op.Slab[] w = p.wholeSlabs();
        io.volpool.op.GpuLaunch l = st.launch(3, new io.volpool.op.Slab(w[st.src()].inD0(), w[st.src()].inDn(),
            w[st.dst() - 1].outD0(), w[st.dst() - 1].outDn()));
        assertThat(l.args().get(0)).as(st.kernel() + " argument 0").isInstanceOf(io.volpool.op.GpuLaunch.Arg.Src.class);
        assertThat(l.args().get(1)).as(st.kernel() + " argument 1").isInstanceOf(io.volpool.op.GpuLaunch.Arg.Dst.class);
        assertThat(l.args()).as(st.kernel() + "'s arguments against volpool.cu").hasSize(declared.get(st.kernel()));
        assertThat(l.work() > 0 || l.gridX() > 0).as(st.kernel() + " grid").isTrue();
        assertThat(l.gridY() * l.gridZ() * l.blockX() * l.blockY()).as(st.kernel() + " grid").isPositive();
        seen.add(st.kernel());
      }
    }
    // the output dtype's kernels: launched by KernelRunner.narrow with (src, dst, count)
    for (io.volpool.format.Dtype t : new io.volpool.format.Dtype[] {io.volpool.format.Dtype.FLOAT16,
        io.volpool.format.Dtype.BFLOAT16}) {
      String k = KernelPlan.of(Pipeline.of(REF_POOL).withOutput(t), REF).narrowKernel();
      assertThat(declared.get(k)).as(k + "'s parameters in volpool.cu").isEqualTo(3);
      seen.add(k);
    }
    // the input dtype's kernel: launched by KernelRunner.widen with (src, dst, numel, type, swap, rescale)
    assertThat(declared.get("widen")).as("widen's parameters in volpool.cu").isEqualTo(6);
    seen.add("widen");
    assertThat(seen).containsExactlyInAnyOrderElementsOf(declared.keySet());
  }

  /** Every 8- and 16-bit dtype has its widen code; wider types are refused (the readers widen them). */
  @Test
  void theDeviceWidensEveryNarrowDtypeAndNoWiderOne() {
    java.util.Set<Integer> codes = new java.util.HashSet<>();
    for (io.volpool.format.Dtype d : io.volpool.format.Dtype.values()) {
      if (d.itemSize() <= 2) {
        codes.add(KernelRunner.widenCode(d));
      } else {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> KernelRunner.widenCode(d))
            .isInstanceOf(IllegalArgumentException.class);
      }
    }
    assertThat(codes).containsExactlyInAnyOrder(0, 1, 2, 3, 4, 5);
  }
}
