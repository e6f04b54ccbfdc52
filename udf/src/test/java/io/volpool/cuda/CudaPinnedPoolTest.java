package io.volpool.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.cpu.CpuBackend;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.testing.RandomData;
import io.volpool.testing.Tolerance;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The pinned pool of a warmed backend ({@code spark.volpool.gpu.pinnedPool.size}): batches carve
 * their staging buffers from it instead of allocating pinned memory, and give the same results as
 * a backend without one; a block larger than what is left is allocated on its own. Skipped without
 * a GPU.
 */
class CudaPinnedPoolTest {
  private static final Pipeline POOL = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));
  private static final VolumeShape IN = new VolumeShape(2, 9, 11, 68);

  private static float[] input(int n) {
    return RandomData.uniform(new SplittableRandom(11), n * IN.numel(), -2, 2);
  }

  @Test
  void batchesCarveTheirPinnedBuffersFromThePoolAndGiveTheSameResults() throws Exception {
    CudaBackend plain = Gpu.backend();
    float[] x = input(6);
    try (CudaBackend b = CudaBackend.create(0.5, new MemoryBudget(512L << 20))) {
      String what = b.warm(List.of(0), 256L << 20);
      assertThat(what).contains("opened").contains("pinned pool of 256");
      float[] got = CudaGoldenTest.runOnGpu(b, POOL, IN, x, 6, 2, 4);
      assertThat(b.pinnedBlocks()[0]).as("pinned blocks carved from the pool").isPositive();
      assertThat(b.pinnedBlocks()[1]).as("pinned blocks allocated on their own").isZero();
      assertThat(got).as("the same bytes as a backend without a pool")
          .isEqualTo(CudaGoldenTest.runOnGpu(plain, POOL, IN, x, 6, 2, 4));
      try (CpuBackend ref = CpuBackend.reference()) {
        Tolerance.assertClose(got, ref.run(POOL, IN, x, 6), "avgpool3d through pooled pinned buffers");
      }
    }
  }

  @Test
  void batchesMadeAheadAreTheOnesATaskOfThatPlanTakes() throws Exception {
    // the job's first wave in local mode: BatchWarmUp makes one batch per first task while the job is submitted
    CudaBackend plain = Gpu.backend();
    float[] x = input(6);
    MemoryBudget budget = new MemoryBudget(512L << 20);
    try (CudaBackend b = CudaBackend.create(0.5, budget)) {
      String what = b.makeBatchesAhead(POOL, IN, io.volpool.format.ValueType.FLOAT32, 2, 6, 0, 4, budget, 2);
      assertThat(what).startsWith("2 of 2 batch(es) of 2 volumes " + IN + " made ahead on cuda:0");
      assertThat(b.pinnedBlocks()[1]).as("pinned blocks made ahead").isEqualTo(2);
      assertThat(budget.used()).as("kept, idle, in the budget").isPositive();
      // a task's batches of 2 (two at most at once): the two made ahead, no pinned block of its own
      float[] got = CudaGoldenTest.runOnGpu(b, POOL, IN, x, 6, 2, 4);
      assertThat(b.pinnedBlocks()[1]).as("pinned blocks after the task ran").isEqualTo(2);
      assertThat(got).isEqualTo(CudaGoldenTest.runOnGpu(plain, POOL, IN, x, 6, 2, 4));
      // volumes that run in slabs have no batches to make
      assertThat(b.makeBatchesAhead(POOL, IN, io.volpool.format.ValueType.FLOAT32, 2, 6, 0, 4, new MemoryBudget(64L << 10), 2))
          .isEqualTo("volumes " + IN + " run in slabs: no batches made ahead");
    }
  }

  @Test
  void aPoolIsSeveralAllocationsOfAtMost128Mebibytes() {
    // JCuda views each host allocation as one ByteBuffer (an int capacity): 2 GiB in one came back with capacity 0;
    // and the driver pins one allocation at a time, holding the tasks' CUDA calls back meanwhile
    assertThat(CudaBackend.poolChunks(320L << 20)).containsExactly(128L << 20, 128L << 20, 64L << 20);
    assertThat(CudaBackend.poolChunks(64L << 20)).containsExactly(64L << 20);
    assertThat(CudaBackend.poolChunks(2L << 30)).hasSize(16).containsOnly(128L << 20);
  }

  @Test
  void aPoolLargerThanTwoGibibytesServesBatches() throws Exception {
    // the H200 run of 2026-12-01 with an 8 GiB pool in one allocation failed every batch ("newLimit > capacity")
    CudaBackend plain = Gpu.backend();
    VolumeShape big = new VolumeShape(4, 32, 128, 256);
    float[] x = RandomData.uniform(new SplittableRandom(5), 12 * big.numel(), -2, 2);
    try (CudaBackend b = CudaBackend.create(0.5, new MemoryBudget(8L << 30))) {
      assertThat(b.warm(List.of(0), 2560L << 20)).contains("pinned pool of 2560").contains("(20 allocation(s))");
      // batches of 4 volumes of 16 MiB: pinned blocks of about 80 MiB, all carved from the pool's chunks
      float[] got = CudaGoldenTest.runOnGpu(b, POOL, big, x, 12, 4, 4);
      assertThat(b.pinnedBlocks()[0]).isPositive();
      assertThat(b.pinnedBlocks()[1]).isZero();
      assertThat(got).isEqualTo(CudaGoldenTest.runOnGpu(plain, POOL, big, x, 12, 4, 4));
    }
  }

  @Test
  void aBlockLargerThanWhatThePoolHasLeftIsAllocatedOnItsOwn() throws Exception {
    CudaBackend plain = Gpu.backend();
    float[] x = input(6);
    try (CudaBackend b = CudaBackend.create(0.5, new MemoryBudget(512L << 20))) {
      b.warm(List.of(0), 4096);
      float[] got = CudaGoldenTest.runOnGpu(b, POOL, IN, x, 6, 2, 4);
      assertThat(b.pinnedBlocks()[0]).as("no batch fits a pool of one page").isZero();
      assertThat(b.pinnedBlocks()[1]).isPositive();
      assertThat(got).isEqualTo(CudaGoldenTest.runOnGpu(plain, POOL, IN, x, 6, 2, 4));
    }
  }
}
