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
        .describe()).as("a pool the box-sum kernel does not take: folded all the same")
        .isEqualTo("fused_avgpool_taps2_c3_c16");
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), new AvgPool3dSpec(5, 3, 2, false, true)), REF,
        false).describe()).as("stages apart").isEqualTo("fused_taps2s1_c3_c16 -> avgpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(), REF).describe()).isEqualTo("copy");
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), REF_POOL), new VolumeShape(3, 16, 32, 30))
        .describe()).as("the box-sum kernel needs 16-byte rows; the shared-memory one does not")
        .isEqualTo("fused_avgpool_taps2_c3_c16");
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
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), mk3), new VolumeShape(3, 16, 32, 33), false)
        .describe()).as("fused then maxpool as two kernels").isEqualTo("fused_taps2s1_c3_c16 -> maxpool_k3s2p1");
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), mk3), REF, false).describe())
        .as("the reference fused output is 31 wide, not a multiple of 4").isEqualTo("fused_taps2s1_c3_c16 -> maxpool_generic");
  }

  @Test
  void anyPoolAfterFusedIsFoldedIntoItsKernel() {
    FusedOp ref = Golden.get("fused_seed").fused();
    io.volpool.ops.maxpool3d.MaxPool3dSpec mk3 = new io.volpool.ops.maxpool3d.MaxPool3dSpec(3, 2, 1, 1, false);
    KernelPlan p = KernelPlan.of(Pipeline.of(ref, mk3), REF);
    assertThat(p.describe()).isEqualTo("fused_maxpool_taps2_c3_c16");
    assertThat(p.used(1)).as("the fused output never in memory").isFalse();
    assertThat(KernelPlan.of(Pipeline.of(ref, new io.volpool.ops.maxpool3d.MaxPool3dSpec(2, 1, 1, 1, true)),
        new VolumeShape(3, 16, 32, 33)).describe()).isEqualTo("fused_maxpool_taps2_c3_c16");
    FusedOp k1 = RandomData.fused(new SplittableRandom(1), 3, 16, 1, 1, 0, 0, 2);
    assertThat(KernelPlan.of(Pipeline.of(k1, mk3), new VolumeShape(3, 6, 8, 10)).describe())
        .as("fused of non-unit steps too").isEqualTo("fused_maxpool_taps2_c3_c16");
    assertThat(KernelPlan.of(Pipeline.of(ref, new io.volpool.ops.maxpool3d.MaxPool3dSpec(3, 2, 1, 2, false)), REF)
        .describe()).as("dilation 2: the pool apart").isEqualTo("fused_taps2s1_c3_c16 -> maxpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(ref, io.volpool.ops.maxpool3d.MaxPool3dSpec.of(5)), REF)
        .describe()).as("a window too large for shared memory: the pool apart")
        .isEqualTo("fused_taps2s1_c3_c16 -> maxpool_generic");
    assertThat(KernelPlan.of(Pipeline.of(Golden.get("fused_k4s2p1").fused(), mk3), new VolumeShape(4, 6, 5, 7)).describe())
        .as("fused without its fast path").isEqualTo("fused_generic -> maxpool_generic");
  }

  @Test
  void storedValuesAreReadByTheFirstPoolOrWidenedFirst() {
    VolumeShape big = new VolumeShape(2, 8, 16, 32);
    io.volpool.ops.maxpool3d.MaxPool3dSpec mk3 = new io.volpool.ops.maxpool3d.MaxPool3dSpec(3, 2, 1, 1, false);
    String[][] cases = {{"uint8", "u8"}, {"int8", "i8"}, {"uint16", "u16"}, {"int16", "i16"}, {"float16", "f16"},
        {"bfloat16", "bf16"}};
    for (String[] c : cases) {
      io.volpool.format.ValueType t = io.volpool.format.ValueType.parse(c[0]);
      KernelPlan a = KernelPlan.of(Pipeline.of(REF_POOL), big, t);
      assertThat(a.describe()).isEqualTo("avgpool_k3s2p1_" + c[1]);
      assertThat(a.readsStored()).isTrue();
      assertThat(a.bufferBytes(0)).as("buffer 0 holds the stored values").isEqualTo(big.numel() * t.itemSize());
      assertThat(KernelPlan.of(Pipeline.of(mk3, REF_POOL), big, t).describe())
          .isEqualTo("maxpool_k3s2p1_" + c[1] + " -> avgpool_k3s2p1");
    }
    io.volpool.format.ValueType i16 = io.volpool.format.ValueType.parse("int16");
    assertThat(KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(2, 8, 16, 36), i16).describe())
        .as("rows of 36 values: no 16-byte loads of 8 int16").isEqualTo("widen -> avgpool_k3s2p1");
    assertThat(KernelPlan.of(Pipeline.of(REF_POOL), big, io.volpool.format.ValueType.parse(">i2")).describe())
        .as("big-endian values are swapped by the widen kernel").isEqualTo("widen -> avgpool_k3s2p1");
    KernelPlan fused = KernelPlan.of(Pipeline.of(Golden.get("fused_seed").fused(), REF_POOL), REF, i16);
    assertThat(fused.describe()).isEqualTo("widen -> pipeline_taps2_c3_c16");
    assertThat(fused.bufferBytes(0)).as("the widened float32 input").isEqualTo(REF.bytes());
    assertThat(fused.deviceBytesPerVolume()).as("float32 input, output, stored input, rescale pair")
        .isEqualTo(REF.bytes() + fused.shapes().get(2).bytes() + REF.numel() * 2 + 8);
    assertThat(KernelPlan.of(Pipeline.of(), REF, i16).describe()).isEqualTo("widen -> copy");
  }

  /** Each kernel's parameter count in volpool.cu (commas inside template brackets do not count). */
  static java.util.Map<String, Integer> kernelParameters() throws Exception {
    String cu;
    try (var in = KernelPlanTest.class.getResourceAsStream("/kernels/volpool.cu")) {
      cu = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
    java.util.Map<String, Integer> out = new java.util.HashMap<>();
    var m = java.util.regex.Pattern.compile("extern \"C\" __global__ void (?:__launch_bounds__\\([^)]*\\) |VOLPOOL_POOL_LAUNCH )?(\\w+)\\(([^)]*)\\)")
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
    java.util.List<KernelPlan> plans = new java.util.ArrayList<>(java.util.List.of(
        KernelPlan.of(Pipeline.of(ref, REF_POOL), REF),
        KernelPlan.of(Pipeline.of(ref), REF),
        KernelPlan.of(Pipeline.of(k1), new VolumeShape(3, 6, 8, 10)),
        KernelPlan.of(Pipeline.of(Golden.get("fused_k4s2p1").fused()), new VolumeShape(4, 6, 5, 7)),
        KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(3, 7, 9, 12)),
        KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(3, 7, 9, 11)),
        KernelPlan.of(Pipeline.of(mk3), new VolumeShape(3, 7, 9, 12)),
        KernelPlan.of(Pipeline.of(new io.volpool.ops.maxpool3d.MaxPool3dSpec(2, 1, 1, 2, true)), new VolumeShape(3, 7, 9, 11)),
        KernelPlan.of(Pipeline.of(ref, mk3), REF),
        KernelPlan.of(Pipeline.of(ref, new AvgPool3dSpec(5, 3, 2, false, true)), REF)));
    for (String t : new String[] {"uint8", "int8", "uint16", "int16", "float16", "bfloat16"}) {
      plans.add(KernelPlan.of(Pipeline.of(REF_POOL), new VolumeShape(3, 7, 9, 16), io.volpool.format.ValueType.parse(t)));
      plans.add(KernelPlan.of(Pipeline.of(mk3), new VolumeShape(3, 7, 9, 16), io.volpool.format.ValueType.parse(t)));
    }
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

  /** The tile constants the launches assume are the kernels' own (a change on one side alone fails here). */
  @Test
  void launchGeometryMatchesTheKernelsConstants() throws Exception {
    String cu;
    try (var in = KernelPlanTest.class.getResourceAsStream("/kernels/volpool.cu")) {
      cu = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
    assertThat(cu).contains("constexpr int FP_TW = " + io.volpool.ops.fused.FusedGpuGeometry.TW + ", FP_TH = "
        + io.volpool.ops.fused.FusedGpuGeometry.TH + ", FP_PLANES = VOLPOOL_FP_PLANES;");
    assertThat(cu).contains("#define VOLPOOL_FP_PLANES " + io.volpool.ops.fused.FusedGpuGeometry.PLANES + "\n");
    assertThat(cu).contains("#define VOLPOOL_TYPED_E " + io.volpool.op.OneReadPoolStep.STORED_COLUMNS + "\n");
    assertThat(cu).contains("#define VOLPOOL_F32_E " + io.volpool.op.OneReadPoolStep.FLOAT_COLUMNS + "\n");
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
