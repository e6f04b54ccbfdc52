package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.backend.PhaseTimes;
import io.volpool.cpu.CpuBackend;
import io.volpool.exec.BatchRunner;
import io.volpool.exec.EngineSpec;
import io.volpool.exec.SlabVolumes;
import io.volpool.exec.TaskState;
import io.volpool.format.NpyHeader;
import io.volpool.format.Rescale;
import io.volpool.io.npy.NpyFileRef;
import io.volpool.io.npy.NpyRange;
import io.volpool.io.npy.NpyRangeInput;
import io.volpool.io.parquet.ParquetBatchWriter;
import io.volpool.job.io.InputPlanner;
import io.volpool.memory.MemoryBudget;
import io.volpool.op.Pipeline;
import io.volpool.op.VolumeShape;
import io.volpool.spark.TaskPlan;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A volume in a C-order .npy file larger than a task, spread over several tasks as ranges of its
 * output planes: the driver plans the ranges from the file's header alone, each range reads only its
 * planes by position (narrow and big-endian types widened as they are read), and the ranges together
 * give one task's output bit for bit, for every operator, a pipeline and odd halos. Through the job,
 * against the same job with the volume in one task.
 */
class NpyRangesTest {
  /** Writes a C-order .npy of {@code descr} with {@code data} (already in the file's byte order). */
  static void writeNpy(Path p, String descr, long[] shape, byte[] data) throws IOException {
    StringBuilder dims = new StringBuilder();
    for (long d : shape) {
      dims.append(d).append(", ");
    }
    String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
    int len = 10 + dict.length() + 1;
    int pad = (64 - len % 64) % 64;
    String header = dict + " ".repeat(pad) + "\n";
    ByteBuffer b = ByteBuffer.allocate(10 + header.length()).order(ByteOrder.LITTLE_ENDIAN);
    b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
    b.putShort((short) header.length()).put(header.getBytes(StandardCharsets.US_ASCII));
    Files.createDirectories(p.getParent());
    try (var out = Files.newOutputStream(p)) {
      out.write(b.array());
      out.write(data);
    }
  }

  /** {@code n} random values of {@code descr} ({@code <f4}, {@code >f4}, {@code <i2}, {@code |u1}), NaN and infinities among floats. */
  static byte[] values(String descr, long n, long seed) {
    Random r = new Random(seed);
    int size = descr.endsWith("4") ? 4 : descr.endsWith("2") ? 2 : 1;
    ByteBuffer b = ByteBuffer.allocate((int) (n * size)).order(descr.startsWith(">") ? ByteOrder.BIG_ENDIAN
        : ByteOrder.LITTLE_ENDIAN);
    for (long i = 0; i < n; i++) {
      switch (descr.substring(1)) {
        case "f4" -> b.putFloat(i == 7 ? Float.NaN : i == 11 ? Float.POSITIVE_INFINITY : (float) r.nextGaussian());
        case "i2" -> b.putShort(i == 3 ? Short.MIN_VALUE : i == 5 ? Short.MAX_VALUE : (short) r.nextInt());
        case "u1" -> b.put((byte) r.nextInt(256));
        default -> throw new IllegalArgumentException(descr);
      }
    }
    return b.array();
  }

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    String[] types = {"<f4", "<i2", ">f4", "|u1"};
    int k = 0;
    for (Arguments a : SlabRangesTest.pipelines().toList()) {
      // every pipeline with float32, and each with one other stored type in turn
      out.add(Arguments.of(a.get()[0], a.get()[1], a.get()[2], "<f4"));
      out.add(Arguments.of(a.get()[0], a.get()[1], a.get()[2], types[1 + k++ % 3]));
    }
    return out.stream();
  }

  /** The output of {@code ranges}, each run as its own task would run it, reassembled; with the counts. */
  static SlabRangesTest.Ran run(List<NpyRange> ranges, Pipeline p, VolumeShape s, Rescale rescale, long budgetBytes) {
    Map<Integer, SlabRangesTest.Ran> out = runTasks(ranges.stream().map(List::of).toList(), p, s, rescale, budgetBytes);
    assertThat(out).as("ranges of one volume").hasSize(1);
    return out.values().iterator().next();
  }

  /**
   * The output of each volume of a file (by its index in the file), each list of {@code tasks} run
   * through one task's engine and input, as the planner packed them (several ranges, of one or two
   * volumes, in one task); the counts go to the volume of the task's first range.
   */
  static Map<Integer, SlabRangesTest.Ran> runTasks(List<List<NpyRange>> tasks, Pipeline p, VolumeShape s, Rescale rescale,
      long budgetBytes) {
    VolumeShape o = p.outputShape(s);
    Map<Integer, SlabRangesTest.Ran> out = new java.util.TreeMap<>();
    MemoryBudget budget = new MemoryBudget(budgetBytes);
    EngineSpec spec = new EngineSpec(p, 0, ParquetBatchWriter.GAP, 4L << 10, true);
    for (List<NpyRange> task : tasks) {
      try (CpuBackend cpu = CpuBackend.fast(1, budget);
          SlabVolumes<NpyRange> run = new SlabVolumes<>(task, new NpyRangeInput(rescale, new Configuration(),
              NpyHeader.DEFAULT_MAX_HEADER_BYTES, new PhaseTimes()), cpu, 0, spec, budget, new TaskState(), "test")) {
        for (BatchRunner.Finished f = run.next(); f != null; f = run.next()) {
          int index = f.items().get(0).filePlace().index();
          SlabRangesTest.Ran r = out.computeIfAbsent(index, k -> {
            SlabRangesTest.Ran x = new SlabRangesTest.Ran(o);
            java.util.Arrays.fill(x.out, Float.NaN);
            return x;
          });
          int r0 = f.planes()[0][0];
          int r1 = f.planes()[0][1];
          assertThat(task.stream().anyMatch(v -> v.index() == index && r0 >= v.outFrom() && r1 <= v.outTo()))
              .as("a range writes only its planes").isTrue();
          SlabRangesTest.place(f, o, r.out);
        }
        SlabRangesTest.Ran first = out.get(task.get(0).index());
        first.rowsRead += run.volumesIn();
        first.bytesIn += run.bytesIn();
        first.done += run.slabbedVolumes();
      }
    }
    return out;
  }

  @ParameterizedTest(name = "{0} {3}")
  @MethodSource("cases")
  void rangesOfAnNpyVolumeGiveOneTasksOutputBitForBit(String name, Pipeline p, VolumeShape s, String descr,
      @TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("in/v.npy");
    int size = descr.endsWith("4") ? 4 : descr.endsWith("2") ? 2 : 1;
    writeNpy(file, descr, new long[] {s.c(), s.d(), s.h(), s.w()}, values(descr, s.numel(), name.hashCode()));
    long stored = s.numel() * size;
    List<TaskPlan> tasks = InputPlanner.npy(tmp.resolve("in").toString(), new Configuration(), stored / 3, 0, 1, f -> true,
        p).tasks();
    List<NpyRange> ranges = tasks.stream().flatMap(t -> t.ranges().stream()).toList();
    assertThat(ranges).as(name + ": ranges planned from the header").hasSizeGreaterThanOrEqualTo(2);
    // ranges of at least SlabRanges.ALIGN output planes: a task of these small volumes reads up to about half
    assertThat(tasks).as("ranges only, each task reading a part of the volume").allMatch(t -> t.files().isEmpty()
        && !t.ranges().isEmpty() && t.bytes() < stored * 2 / 3);
    int next = 0;
    for (NpyRange r : ranges) {
      assertThat(r.outFrom()).as("ranges tile the output planes").isEqualTo(next);
      next = r.outTo();
    }
    VolumeShape o = p.outputShape(s);
    assertThat(next).isEqualTo(o.d());
    NpyFileRef ref = ranges.get(0).file();
    Rescale rescale = descr.equals("<i2") ? new Rescale(0.5f, -1024f) : Rescale.IDENTITY;
    // the reference: one task over the same values widened whole in memory and saved as float32, so positioned
    // reads of a narrow type are checked against a widening that knows nothing of planes and offsets
    byte[] raw = Files.readAllBytes(file);
    ByteBuffer f32 = ByteBuffer.allocate((int) s.numel() * 4).order(ByteOrder.LITTLE_ENDIAN);
    io.volpool.format.ValueType.parse(descr).widen(ByteBuffer.wrap(raw, raw.length - (int) stored, (int) stored), (int) s.numel(),
        f32, rescale);
    Path ref32 = tmp.resolve("ref/v.npy");
    writeNpy(ref32, "<f4", new long[] {s.c(), s.d(), s.h(), s.w()}, f32.array());
    NpyRange whole = new NpyRange(new NpyFileRef(ref32.toUri().toString(), "v.npy", Files.size(ref32)), 0, false, s, 0,
        o.d(), 0, s.d());
    // a small budget: several slabs per range, of a plane count the range's bounds force down
    SlabRangesTest.Ran one = run(List.of(whole), p, s, Rescale.IDENTITY, 2L << 20);
    // each task's ranges through one task's engine and input, as the planner packed them
    SlabRangesTest.Ran split = runTasks(tasks.stream().map(TaskPlan::ranges).toList(), p, s, rescale, 2L << 20).get(0);
    VolumesAcrossRowsTest.assertBitIdentical(split.out, one.out, name + " " + descr + ": ranges against one task");
    assertThat(one.rowsRead).isEqualTo(1);
    assertThat(split.rowsRead).as("the volume counted once, by the range from plane 0").isEqualTo(1);
    assertThat(split.done).as("ranges finished").isEqualTo(ranges.size());
    long windows = ranges.stream().mapToLong(r -> (long) (r.inTo() - r.inFrom()) * s.c() * s.h() * s.w() * size).sum();
    assertThat(one.bytesIn).as("one task reads the planes its outputs read").isLessThanOrEqualTo(s.bytes())
        .isGreaterThan(0);
    assertThat(split.bytesIn).as("ranges read their windows only (halos twice), at their stored width")
        .isLessThanOrEqualTo(windows).isGreaterThanOrEqualTo(one.bytesIn / 4 * size);
  }

  @Test
  void aBatchFileSpreadsEachOfItsVolumesAndAFortranFileStaysWhole(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 300, 6, 8);
    Pipeline p = (Pipeline) SlabRangesTest.pipelines().toList().get(0).get()[1]; // avgpool3d k3 s2 p1
    writeNpy(tmp.resolve("in/b.npy"), "<i2", new long[] {3, s.c(), s.d(), s.h(), s.w()}, values("<i2", 3 * s.numel(), 9));
    // tasks of 33,300 bytes: a volume's second and third ranges do not fit one, its third and the next volume's first do
    List<TaskPlan> tasks = InputPlanner.npy(tmp.resolve("in").toString(), new Configuration(), 33_300, 0, 1,
        f -> true, p).tasks();
    List<NpyRange> ranges = tasks.stream().flatMap(t -> t.ranges().stream()).toList();
    assertThat(ranges.stream().map(NpyRange::index).distinct()).containsExactly(0, 1, 2);
    assertThat(ranges.stream().filter(NpyRange::counts)).hasSize(3);
    assertThat(ranges.get(0).record()).startsWith(ranges.get(0).file().path() + "[0] output planes [0, ")
        .endsWith("b.npy[0] output planes [0, 64)");
    VolumeShape o = p.outputShape(s);
    assertThat(tasks).as("a task holding ranges of two volumes of the file").anyMatch(t -> t.ranges().stream()
        .map(NpyRange::index).distinct().count() > 1);
    Map<Integer, SlabRangesTest.Ran> split = runTasks(tasks.stream().map(TaskPlan::ranges).toList(), p, s,
        Rescale.IDENTITY, 2L << 20);
    assertThat(split.keySet()).containsExactly(0, 1, 2);
    for (int i = 0; i < 3; i++) {
      SlabRangesTest.Ran one = run(List.of(new NpyRange(ranges.get(0).file(), i, true, s, 0, o.d(), 0, s.d())), p, s,
          Rescale.IDENTITY, 2L << 20);
      VolumesAcrossRowsTest.assertBitIdentical(split.get(i).out, one.out, "volume " + i + " of a batch file");
    }
    assertThat(split.values().stream().mapToLong(r -> r.rowsRead).sum()).as("three volumes read, each once").isEqualTo(3);
    // a Fortran-ordered file is reordered whole in memory by its task: never spread
    String dict = "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 300, 6, 8), }";
    Path f = tmp.resolve("f/x.npy");
    writeNpy(f, "<i2", new long[] {2, 300, 6, 8}, values("<i2", s.numel(), 1));
    byte[] b = Files.readAllBytes(f);
    byte[] h = dict.getBytes(StandardCharsets.US_ASCII);
    System.arraycopy(h, 0, b, 10, h.length);
    Files.write(f, b);
    List<TaskPlan> ft = InputPlanner.npy(tmp.resolve("f").toString(), new Configuration(), 1000, 0, 1, x -> true, p).tasks();
    assertThat(ft).hasSize(1);
    assertThat(ft.get(0).ranges()).isEmpty();
    assertThat(ft.get(0).files()).hasSize(1);
  }

  /**
   * Through the job's main in a JVM of its own whose task size is a fraction of one int16 .npy volume:
   * with output across rows it runs as several range tasks on two cores, and its output equals the
   * run with the volume in one task (spreadVolumes=false), bit for bit; the summary counts one volume.
   */
  @Test
  void anNpyVolumeLargerThanATaskRunsAsRangesInSeveralTasks(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 512, 32, 32);
    writeNpy(tmp.resolve("in/big.npy"), "<i2", new long[] {s.c(), s.d(), s.h(), s.w()}, values("<i2", s.numel(), 5));
    Path whole = tmp.resolve("whole");
    SparkTests.Result one = SparkTests.run(SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output", whole.toString(), "output.format", "parquet", "output.layout", "rows", "pipeline", "avgpool3d", "device", SparkTests.device(),
        "input.spreadVolumes", "false"));
    assertThat(one.code()).as(one.err()).isZero();
    assertThat(one.err()).doesNotContain("ranges of output planes");
    Path out = tmp.resolve("ranges");
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", SparkTests.conf("input", tmp.resolve("in").toString(),
        "input.format", "npy", "output", out.toString(), "output.format", "parquet", "output.layout", "rows", "pipeline", "avgpool3d", "device",
        SparkTests.device(), "spark.sql.files.maxPartitionBytes", "300000", "spark.sql.files.openCostInBytes", "0"),
        tmp.resolve("child.log"));
    assertThat(c.waitFor(180)).as(c.output()).isZero();
    assertThat(c.output()).contains("ranges of output planes in").contains("volumes       1 in, 1 out")
        .containsPattern("volpool progress: [0-9.]+ [kMG]B of [0-9.]+ [kMG]B read \\(100.0%\\)");
    VolumeShape o = new VolumeShape(2, 256, 16, 16);
    Map<String, float[]> a = VolumesAcrossRowsTest.readOutput(whole, Map.of("big.npy", o));
    Map<String, float[]> b = VolumesAcrossRowsTest.readOutput(out, Map.of("big.npy", o));
    assertThat(VolumesAcrossRowsTest.ROWS.get("big.npy")).as("output rows from several range tasks").isGreaterThan(1);
    VolumesAcrossRowsTest.assertBitIdentical(b.get("big.npy"), a.get("big.npy"), ".npy ranges in tasks against one task");
    JsonNode summary = new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
    assertThat(summary.get("volumes_in").asLong()).isEqualTo(1);
    assertThat(summary.get("bytes_in").asLong()).as("int16 planes read, halos of neighbouring ranges twice")
        .isGreaterThanOrEqualTo(s.numel() * 2).isLessThan(s.numel() * 2 * 11 / 10);
  }

  /**
   * A run of .npy ranges killed once half its range tasks committed, resumed: the resumed run keeps the
   * committed ranges, runs the rest, and its output equals a clean run's bit for bit, the volume counted
   * once (by the range from plane 0, kept or run).
   */
  @Test
  void aKilledRunOfNpyRangesIsResumedFromItsCommittedRanges(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 1024, 128, 128);
    writeNpy(tmp.resolve("in/big.npy"), "<i2", new long[] {s.c(), s.d(), s.h(), s.w()}, values("<i2", s.numel(), 3));
    Map<String, String> conf = SparkTests.conf("input", tmp.resolve("in").toString(), "input.format", "npy",
        "output.format", "parquet", "output.layout", "rows", "pipeline", "avgpool3d", "device", "cpu",
        "spark.sql.files.maxPartitionBytes", String.valueOf(4L << 20), "spark.sql.files.openCostInBytes", "0");
    Path clean = tmp.resolve("clean");
    conf.put("spark.volpool.output", clean.toString());
    ChildJvm.Child c = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("clean.log"));
    assertThat(c.waitFor(300)).as(c.output()).isZero();
    int tasks = ResumeTest.summary(clean).get("files_out").asInt();
    assertThat(tasks).as("range tasks of the clean run (one file each)").isGreaterThanOrEqualTo(8);
    Path out = tmp.resolve("out/pooled");
    conf.put("spark.volpool.output", out.toString());
    conf.put("spark.volpool.output.mode", "resume");
    int committed = ResumeTest.killAfter(tmp, conf, out, tasks / 2, "killed");
    // resumed with spreading off: the killed run's plan (its ranges) is what runs, so its committed ranges are kept
    conf.put("spark.volpool.input.spreadVolumes", "false");
    ChildJvm.Child r = ChildJvm.start("1g", "local[2]", conf, tmp.resolve("resumed.log"));
    assertThat(r.waitFor(300)).as(r.output()).isZero();
    assertThat(r.output()).contains("ranges of output planes in " + tasks + " separate tasks");
    JsonNode summary = ResumeTest.summary(out);
    JsonNode resumed = summary.get("resumed");
    assertThat(resumed).as("the summary says what was resumed: " + summary).isNotNull();
    assertThat(resumed.get("tasks_kept").asLong()).isGreaterThanOrEqualTo(committed);
    assertThat(resumed.get("tasks_run").asLong()).isEqualTo(tasks - resumed.get("tasks_kept").asLong());
    assertThat(summary.get("volumes_in").asLong() + resumed.get("volumes_kept").asLong()).as("the volume, once")
        .isEqualTo(1);
    VolumeShape o = new VolumeShape(2, 512, 64, 64);
    VolumesAcrossRowsTest.assertBitIdentical(VolumesAcrossRowsTest.readOutput(out, Map.of("big.npy", o)).get("big.npy"),
        VolumesAcrossRowsTest.readOutput(clean, Map.of("big.npy", o)).get("big.npy"), "resumed .npy ranges against a clean run");
  }

  /**
   * Each range task opens the file itself: one that finds the file replaced or rewritten since the driver
   * listed it (size or modification time), before it reads or after, fails as bad input naming the file,
   * rather than mixing two files' planes in one output.
   */
  @Test
  void aRangeOfAFileChangedSinceThePlanFailsNamingIt(@TempDir Path tmp) throws Exception {
    VolumeShape s = new VolumeShape(2, 300, 6, 8);
    Pipeline p = (Pipeline) SlabRangesTest.pipelines().toList().get(0).get()[1];
    Path file = tmp.resolve("in/v.npy");
    writeNpy(file, "<i2", new long[] {s.c(), s.d(), s.h(), s.w()}, values("<i2", s.numel(), 4));
    List<NpyRange> ranges = InputPlanner.npy(tmp.resolve("in").toString(), new Configuration(), s.numel(), 0, 1, f -> true,
        p).tasks().stream().flatMap(t -> t.ranges().stream()).toList();
    assertThat(ranges).hasSizeGreaterThanOrEqualTo(2);
    assertThat(ranges.get(0).file().modified()).as("the listing's modification time is planned").isPositive();
    assertThat(run(List.of(ranges.get(0)), p, s, Rescale.IDENTITY, 2L << 20).done).isEqualTo(1);
    // rewritten after the range read its planes: found when it finishes
    NpyRangeInput in = new NpyRangeInput(Rescale.IDENTITY, new Configuration(), NpyHeader.DEFAULT_MAX_HEADER_BYTES,
        new PhaseTimes());
    in.first(ranges.get(1));
    io.volpool.backend.PlaneSource src = in.open(ranges.get(1));
    Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(ranges.get(1).file().modified() + 2000));
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> in.finish(src))
        .isInstanceOf(io.volpool.io.CorruptInputException.class)
        .hasMessageContaining(file.getFileName() + ": the input file changed while the job read it (planned with");
    src.close();
    in.close();
    // replaced (same size, another file) before a range opens it
    writeNpy(file, "<i2", new long[] {s.c(), s.d(), s.h(), s.w()}, values("<i2", s.numel(), 5));
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> run(List.of(ranges.get(1)), p, s, Rescale.IDENTITY, 2L << 20))
        .isInstanceOf(io.volpool.io.CorruptInputException.class).hasMessageContaining("changed while the job read it");
    Files.delete(file);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> run(List.of(ranges.get(0)), p, s, Rescale.IDENTITY, 2L << 20))
        .isInstanceOf(io.volpool.io.CorruptInputException.class).hasMessageContaining("it is gone");
  }
}
