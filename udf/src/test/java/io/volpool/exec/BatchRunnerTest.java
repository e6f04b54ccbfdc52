package io.volpool.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.volpool.backend.PhaseTimes;
import io.volpool.backend.VolumeSink;
import io.volpool.cpu.CpuBackend;
import io.volpool.io.PageGate;
import io.volpool.io.VolumeInput;
import io.volpool.io.VolumeSource;
import io.volpool.memory.MemoryBudget;
import io.volpool.memory.MemoryBudgetException;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.testing.RandomData;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The task engine on the CPU backend with in-memory inputs: results in input order across shape
 * changes, every volume exactly as the backend computes it alone, and no deadlock when many
 * runners share a budget that holds only a couple of batches while their readers ask for pages.
 */
class BatchRunnerTest {
  static final Pipeline POOL = Pipeline.of(new AvgPool3dSpec(3, 2, 1, false, true));

  /**
   * Volumes in memory; each may ask its gate for page memory before it is returned, like a compressed
   * page. {@link #squeeze} makes the gate's answer certain: before asking for one volume's page, the
   * input takes the whole budget for itself, so the page cannot fit; it gives it back when asked again.
   */
  static final class Input implements VolumeInput {
    final List<VolumeShape> shapes;
    final List<float[]> data;
    final long pageBytes;
    int next;
    long held;
    PageGate heldBy;
    int refusals;
    /** The budget to fill before asking for volume {@link #squeezeAt}'s page, or null. */
    MemoryBudget squeeze;
    int squeezeAt = -1;
    /** Set while the budget is filled; given back on the next ask, or by a timer should the gate wait instead. */
    final java.util.concurrent.atomic.AtomicReference<Object> squeezing = new java.util.concurrent.atomic.AtomicReference<>();

    Input(List<VolumeShape> shapes, List<float[]> data, long pageBytes) {
      this.shapes = shapes;
      this.data = data;
      this.pageBytes = pageBytes;
    }

    @Override
    public VolumeSource next(PageGate gate) {
      if (held > 0) {
        heldBy.release(held);
        held = 0;
      }
      if (next >= shapes.size()) {
        return null;
      }
      if (pageBytes > 0) {
        unsqueeze();
        boolean squeezed = squeeze != null && next == squeezeAt;
        if (squeezed) {
          squeezeOnce();
        }
        if (!gate.acquire(pageBytes, "page of volume " + next)) {
          refusals++;
          throw new PageGate.Refused();
        }
        if (squeezed) {
          // the gate waited until the timer gave the budget back: right for a runner that held
          // nothing (after a refusal it starts its next batch empty); try again at the next volume
          squeezeAt = next + 1;
        }
        held = pageBytes;
        heldBy = gate;
      }
      int i = next++;
      return new VolumeSource() {
        @Override
        public String record() {
          return "v" + i;
        }

        @Override
        public VolumeShape shape() {
          return shapes.get(i);
        }

        @Override
        public void copyTo(VolumeSink dst) {
          ByteBuffer b = ByteBuffer.allocate(data.get(i).length * 4).order(ByteOrder.LITTLE_ENDIAN);
          b.asFloatBuffer().put(data.get(i));
          dst.put(b);
        }
      };
    }

    /**
     * Takes the whole limit (beyond what idle buffers could give back), so no page fits until it is
     * given back. A gate that waits (right only while the runner holds nothing) waits here until a
     * timer gives the budget back after a second.
     */
    private void squeezeOnce() {
      squeezeAt = -1;
      Object token = new Object();
      squeeze.forceAcquire(squeeze.limit(), MemoryBudget.Use.BATCHES);
      squeezing.set(token);
      Thread timer = new Thread(() -> {
        try {
          Thread.sleep(1_000);
        } catch (InterruptedException e) {
          return;
        }
        if (squeezing.compareAndSet(token, null)) {
          squeeze.release(squeeze.limit(), MemoryBudget.Use.BATCHES);
        }
      }, "squeeze-timer");
      timer.setDaemon(true);
      timer.start();
    }

    private void unsqueeze() {
      Object token = squeezing.get();
      if (token != null && squeezing.compareAndSet(token, null)) {
        squeeze.release(squeeze.limit(), MemoryBudget.Use.BATCHES);
      }
    }

    @Override
    public long volumes() {
      return next;
    }

    @Override
    public void close() {
      unsqueeze();
      if (held > 0) {
        heldBy.release(held);
        held = 0;
      }
    }
  }

  static Input input(List<VolumeShape> shapes, long seed, long pageBytes) {
    SplittableRandom r = new SplittableRandom(seed);
    List<float[]> data = new ArrayList<>();
    for (VolumeShape s : shapes) {
      data.add(RandomData.uniform(r, s.numel(), -1, 1));
    }
    return new Input(shapes, data, pageBytes);
  }

  /** Runs the input through a runner and returns each volume's output, in the order they came back. */
  static List<float[]> run(Input in, CpuBackend cpu, MemoryBudget budget, int batch) {
    TaskState task = new TaskState();
    List<float[]> out = run(in, cpu, budget, batch, ScratchFiles.TEMP, task);
    // the first batch's buffers were new: their allocation is timed apart from waiting for the budget
    assertThat(task.times().get(io.volpool.backend.Phase.ALLOCATE)).as("time allocating batch buffers").isPositive();
    return out;
  }

  static List<float[]> run(Input in, CpuBackend cpu, MemoryBudget budget, int batch, ScratchFiles scratch, TaskState task) {
    List<float[]> out = new ArrayList<>();
    EngineSpec spec = new EngineSpec(POOL, batch, 4, 512L << 20, false);
    try (BatchRunner r = new BatchRunner(in, cpu, 0, spec, budget, task, "test", scratch)) {
      BatchRunner.Finished f;
      while ((f = r.next()) != null) {
        assertThat(f.items().size()).isBetween(1, batch);
        for (int i = 0; i < f.items().size(); i++) {
          float[] y = new float[(int) f.outShape().numel()];
          f.output().slice((int) f.offsets()[i], (int) f.outShape().bytes()).order(ByteOrder.LITTLE_ENDIAN)
              .asFloatBuffer().get(y);
          out.add(y);
        }
      }
    }
    return out;
  }

  @Test
  void resultsComeBackInInputOrderAcrossShapeChanges() {
    VolumeShape a = new VolumeShape(2, 5, 6, 7);
    VolumeShape b = new VolumeShape(1, 3, 4, 8);
    List<VolumeShape> shapes = List.of(a, a, a, b, a, b, b, b, b, a);
    Input in = input(shapes, 1, 0);
    MemoryBudget budget = new MemoryBudget(64L << 20);
    try (CpuBackend cpu = CpuBackend.fast(2, budget)) {
      List<float[]> got = run(in, cpu, budget, 3);
      assertThat(got).hasSize(shapes.size());
      for (int i = 0; i < shapes.size(); i++) {
        assertThat(got.get(i)).as("volume %d", i).containsExactly(cpu.run(POOL, shapes.get(i), in.data.get(i), 1));
      }
    }
    assertThat(budget.used()).as("every batch given back").isZero();
  }

  @Test
  void aBudgetForOneBatchStillFinishes() {
    VolumeShape s = new VolumeShape(4, 8, 8, 8);
    List<VolumeShape> shapes = new ArrayList<>();
    for (int i = 0; i < 17; i++) {
      shapes.add(s);
    }
    Input in = input(shapes, 2, 0);
    // batches of 4 volumes hold 4 x (8 KiB in + 1 KiB out floats + 1 KiB out bytes); two would not fit
    MemoryBudget budget = new MemoryBudget(2 * (4 * (8192 + 1024 + 1028) + 64));
    try (CpuBackend cpu = CpuBackend.fast(1, budget)) {
      assertThat(run(in, cpu, budget, 4)).hasSize(17);
    }
  }

  @Test
  void aRunnerHoldingABatchIsRefusedPageMemoryAndHandsItsBatchesBackInsteadOfWaiting() {
    // the budget is full when volume 4's page is asked for, while the runner fills its second batch
    // (volume 3 is in it): waiting there could wait for ever on memory held by runners like this
    // one, so the gate refuses; the runner submits what it holds, returns it, and asks again holding
    // nothing, when it may wait (and the input gives the budget back)
    VolumeShape s = new VolumeShape(4, 8, 8, 8);
    List<VolumeShape> shapes = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      shapes.add(s);
    }
    Input in = input(shapes, 3, 8192);
    MemoryBudget budget = new MemoryBudget(64L << 20);
    in.squeeze = budget;
    in.squeezeAt = 4;
    try (CpuBackend cpu = CpuBackend.fast(1, budget)) {
      List<float[]> got = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(60),
          () -> run(in, cpu, budget, 3));
      assertThat(in.refusals).as("page requests refused while the runner held a batch").isEqualTo(1);
      assertThat(got).hasSize(shapes.size());
      for (int i = 0; i < shapes.size(); i++) {
        assertThat(got.get(i)).as("volume %d", i).containsExactly(cpu.run(POOL, s, in.data.get(i), 1));
      }
    }
    assertThat(budget.used()).as("every batch and page given back").isZero();
  }

  @Test
  void manyRunnersSharingATightBudgetWithPagesNeverDeadlock() throws Exception {
    VolumeShape s = new VolumeShape(4, 8, 8, 8);
    MemoryBudget budget = new MemoryBudget(8 * (3 * (8192 + 1024 + 1028)) + 4 * 8192);
    try (CpuBackend cpu = CpuBackend.fast(2, budget)) {
      ExecutorService pool = Executors.newFixedThreadPool(8);
      List<Future<Integer>> fs = new ArrayList<>();
      List<Input> inputs = new ArrayList<>();
      List<TaskState> tasks = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        List<VolumeShape> shapes = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
          shapes.add(s);
        }
        Input in = input(shapes, 10 + t, 8192);
        // each runner is refused at least once, at a volume where it holds a batch (the second of a
        // batch of 3, or later where another runner's refusal made its batches start elsewhere),
        // whatever the other runners' timing; otherwise they contend for the budget freely
        in.squeeze = budget;
        in.squeezeAt = 3 * t + 1;
        inputs.add(in);
        TaskState task = new TaskState();
        tasks.add(task);
        fs.add(pool.submit(() -> {
          // a task may get every buffer handed over by another: only some tasks allocate
          List<float[]> got = run(in, cpu, budget, 3, ScratchFiles.TEMP, task);
          for (int i = 0; i < got.size(); i++) {
            assertThat(got.get(i)).containsExactly(cpu.run(POOL, s, in.data.get(i), 1));
          }
          return got.size();
        }));
      }
      for (Future<Integer> f : fs) {
        assertThat(f.get(120, TimeUnit.SECONDS)).isEqualTo(40);
      }
      assertThat(tasks.stream().mapToLong(t -> t.times().get(io.volpool.backend.Phase.ALLOCATE)).sum())
          .as("time allocating batch buffers, over all tasks").isPositive();
      pool.shutdown();
      for (int t = 0; t < inputs.size(); t++) {
        assertThat(inputs.get(t).refusals).as("page requests of runner %d refused while it held a batch", t)
            .isPositive();
      }
    }
    assertThat(budget.used()).isZero();
  }

  @Test
  void volumesLargerThanABatchMayBeRunAloneInSlabsBetweenOthers() {
    // [4, 16, 16, 16] needs ~80 KB as a batch of one; half of a 100 KB budget is less: it runs in
    // slabs, spilled to a local file, between batches of smaller volumes, in input order
    VolumeShape big = new VolumeShape(4, 16, 16, 16);
    VolumeShape small = new VolumeShape(1, 4, 4, 4);
    List<VolumeShape> shapes = List.of(small, small, big, small, big);
    MemoryBudget budget = new MemoryBudget(100_000);
    MemoryBudget roomy = new MemoryBudget(64L << 20);
    assertThat(CpuBackend.batchBytes(POOL, big, 1, 4)).isGreaterThan(budget.maxRequest());
    try (CpuBackend cpu = CpuBackend.fast(1, budget); CpuBackend whole = CpuBackend.fast(1, roomy)) {
      List<float[]> slabbed = run(input(shapes, 4, 0), cpu, budget, 2);
      List<float[]> batched = run(input(shapes, 4, 0), whole, roomy, 2);
      assertThat(slabbed).hasSize(shapes.size());
      for (int i = 0; i < shapes.size(); i++) {
        assertThat(slabbed.get(i)).as("volume %d", i).isEqualTo(batched.get(i));
      }
    }
    assertThat(budget.used()).as("everything given back once the backend's pools close").isZero();
  }

  /**
   * Progress through a volume larger than a batch, stored in one row: its input bytes are counted as
   * its slabs finish, not when it ends, both when its output is one value and when it streams out
   * across rows; the count ends exact, with the small volume after it added whole.
   */
  @Test
  void aSlabbedVolumesBytesAreCountedAsItsSlabsFinish() {
    VolumeShape big = new VolumeShape(4, 16, 16, 16);
    VolumeShape small = new VolumeShape(1, 4, 4, 4);
    MemoryBudget budget = new MemoryBudget(100_000);
    for (boolean rows : new boolean[] {false, true}) {
      List<Long> seen = new ArrayList<>();
      EngineSpec spec = new EngineSpec(POOL, 2, 4, rows ? 16L << 10 : 512L << 20, rows);
      try (CpuBackend cpu = CpuBackend.fast(1, budget);
          BatchRunner r = new BatchRunner(input(List.of(big, small), 9, 0), cpu, 0, spec, budget, new TaskState(), "test",
              ScratchFiles.TEMP)) {
        r.onRead(() -> seen.add(r.bytesIn()));
        while (r.next() != null) {
          // drain
        }
        assertThat(r.bytesIn()).isEqualTo(big.bytes() + small.bytes());
        assertThat(r.slabbedVolumes()).isEqualTo(1);
      }
      assertThat(seen).as("rows=%s: counted along the volume: %s", rows, seen).isSorted();
      assertThat(seen.stream().filter(b -> b > 0 && b < big.bytes()).count())
          .as("rows=%s: counts between none and the whole volume: %s", rows, seen).isGreaterThanOrEqualTo(3);
      assertThat(seen).as("rows=%s: the volume counted exactly once it is done", rows).contains(big.bytes());
    }
  }

  @Test
  void spillFilesAreReusedVolumeAfterVolumeAndUnmappedAndDeletedAtTheEnd() throws Exception {
    // volumes too large for a batch, read through copyTo (not by position): each spills its input and
    // its output to mapped files, the task's two scratch files, reused while they are large enough (a
    // fresh file per volume made every write fault in new pages) and replaced by larger ones when a
    // larger volume comes; a deleted file stays on disk and in memory while it is mapped
    VolumeShape big = new VolumeShape(4, 16, 16, 16);
    VolumeShape bigger = new VolumeShape(4, 20, 16, 16);
    MemoryBudget budget = new MemoryBudget(100_000);
    MemoryBudget roomy = new MemoryBudget(64L << 20);
    List<java.io.File> made = new ArrayList<>();
    ScratchFiles recording = what -> {
      java.io.File f = ScratchFiles.TEMP.create(what);
      made.add(f);
      return f;
    };
    List<VolumeShape> shapes = List.of(big, big, big, bigger, big);
    List<float[]> spilled;
    List<float[]> batched;
    try (CpuBackend cpu = CpuBackend.fast(1, budget); CpuBackend whole = CpuBackend.fast(1, roomy)) {
      spilled = run(input(shapes, 6, 0), cpu, budget, 1, recording, new TaskState());
      batched = run(input(shapes, 6, 0), whole, roomy, 1);
    }
    assertThat(spilled).hasSize(shapes.size());
    for (int i = 0; i < shapes.size(); i++) {
      assertThat(spilled.get(i)).as("volume %d, through reused scratch files, equals its batched result", i)
          .isEqualTo(batched.get(i));
    }
    assertThat(made).as("an input and an output file for the three volumes [4,16,16,16], new ones for the larger one,"
        + " reused for the last").hasSize(4);
    String maps = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/self/maps"));
    for (java.io.File f : made) {
      assertThat(f).as("deleted").doesNotExist();
      assertThat(maps).as("no mapping left of " + f).doesNotContain(f.getName());
    }
  }

  @Test
  void aVolumeNotEvenOnePlaneOfWhichFitsIsNamed() {
    VolumeShape s = new VolumeShape(4, 16, 16, 16);
    MemoryBudget budget = new MemoryBudget(20_000);
    try (CpuBackend cpu = CpuBackend.fast(1, budget)) {
      assertThatThrownBy(() -> run(input(List.of(s), 3, 0), cpu, budget, 1))
          .isInstanceOf(MemoryBudgetException.class)
          .hasMessageStartingWith("volume v0 [4, 16, 16, 16] (0.1 MiB): one output plane through avgpool3d needs")
          .hasMessageContaining("spark.volpool.memory.budget");
    }
  }

  @Test
  void anAutomaticBatchIsNeverLargerThanTheVolumesTheTaskHolds() {
    VolumeShape s = new VolumeShape(2, 8, 8, 8);
    MemoryBudget budget = new MemoryBudget(1L << 30);
    try (CpuBackend cpu = CpuBackend.fast(1, budget)) {
      assertThat(cpu.plan(POOL, s, 0, 0, 0, 4, budget).batch()).as("unknown count").isGreaterThan(64);
      assertThat(cpu.plan(POOL, s, 0, 64, 0, 4, budget).batch()).as("a task of 64 volumes").isEqualTo(64);
      assertThat(cpu.plan(POOL, s, 100, 64, 0, 4, budget).batch()).as("a batch size the user set is kept").isEqualTo(100);
    }
  }

  @Test
  void anAutomaticBatchSizeFitsOneRequestOfTheBudget() {
    // the CPU backend suggests 64 MiB batches; a 1 MB budget admits 500 KB at once
    VolumeShape s = new VolumeShape(1, 8, 16, 16);
    List<VolumeShape> shapes = java.util.Collections.nCopies(200, s);
    MemoryBudget budget = new MemoryBudget(1_000_000);
    List<float[]> out = new ArrayList<>();
    EngineSpec spec = new EngineSpec(POOL, 0, 4, 512L << 20, false);
    try (CpuBackend cpu = CpuBackend.fast(1, budget);
        BatchRunner r = new BatchRunner(input(shapes, 5, 0), cpu, 0, spec, budget, new TaskState(), "test", ScratchFiles.TEMP)) {
      int unbounded = cpu.plan(POOL, s, 0, 0, 0, 4, new MemoryBudget(1L << 40)).batch();
      assertThat(CpuBackend.batchBytes(POOL, s, unbounded, 4)).as("the plan's batch under a large budget")
          .isGreaterThan(budget.maxRequest());
      assertThat(CpuBackend.batchBytes(POOL, s, cpu.plan(POOL, s, 0, 0, 0, 4, budget).batch(), 4))
          .isLessThanOrEqualTo(budget.maxRequest());
      BatchRunner.Finished f;
      while ((f = r.next()) != null) {
        assertThat(f.items().size() * CpuBackend.batchBytes(POOL, s, 1, 4)).isLessThanOrEqualTo(budget.maxRequest());
        out.add(new float[0]);
      }
      assertThat(out.size()).as("batches").isGreaterThan(1);
      assertThat(r.volumesIn()).isEqualTo(200);
      assertThat(r.slabbedVolumes()).isZero();
    }
  }
}
