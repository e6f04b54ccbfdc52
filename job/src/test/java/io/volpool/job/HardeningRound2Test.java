package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a new and a hostile user hit (round 2): each case as the user runs it, through the job's main. */
class HardeningRound2Test {
  static Path input(Path tmp) {
    Path in = tmp.resolve("in");
    if (!Files.exists(in)) {
      HardeningTest.volumes("a", "b").coalesce(1).write().parquet(in.toString());
    }
    return in;
  }

  // F. an empty value is refused, never read as the default
  @Test
  void emptyValuesAreRefusedNotTakenAsDefaults(@TempDir Path tmp) throws Exception {
    Path in = input(tmp);
    for (String[] kv : new String[][] {{"spark.volpool.pipeline", ""}, {"spark.volpool.memory.budget", " "},
        {"spark.volpool.avgpool3d.kernelSize", ""}}) {
      Map<String, String> conf = HardeningTest.identity(in, tmp.resolve("out"));
      conf.put(kv[0], kv[1]);
      SparkTests.Result r = SparkTests.run(conf);
      assertThat(r.code()).as(kv[0] + ": " + r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
      assertThat(r.err()).contains("volpool: FAILED: invalid settings: " + kv[0] + " is set to an empty value");
      assertThat(tmp.resolve("out")).doesNotExist();
    }
    for (String p : new String[] {"avgpool3d,,maxpool3d", "identity,", ",identity"}) {
      Map<String, String> conf = HardeningTest.identity(in, tmp.resolve("out"));
      conf.put("spark.volpool.pipeline", p);
      SparkTests.Result r = SparkTests.run(conf);
      assertThat(r.code()).as(p + ": " + r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
      assertThat(r.err()).contains("spark.volpool.pipeline has an empty stage in '" + p + "'");
    }
  }

  // 9. a shortened key gets the key it shortens
  @Test
  void aShortenedKeyGetsTheKeyItShortens(@TempDir Path tmp) throws Exception {
    Map<String, String> conf = HardeningTest.identity(input(tmp), tmp.resolve("out"));
    conf.put("spark.volpool.avgpool3d.kernel", "3");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("unknown setting spark.volpool.avgpool3d.kernel; did you mean"
        + " spark.volpool.avgpool3d.kernelSize?").doesNotContain("known settings:");
  }

  // 5. avgpool3d's defaults are PyTorch's: stride the kernel, padding 0, and no default kernel
  @Test
  void avgpoolDefaultsArePyTorchs(@TempDir Path tmp) throws Exception {
    Path in = input(tmp);
    Map<String, String> conf = HardeningTest.identity(in, tmp.resolve("out"), "pipeline", "avgpool3d",
        "avgpool3d.kernelSize", "4");
    SparkTests.Result r = SparkTests.run(conf);
    assertThat(r.code()).as(r.err()).isZero();
    // nn.AvgPool3d(4) on [3, 8, 8, 8]: [3, 2, 2, 2] (stride 4, padding 0); volpool's old defaults gave [3, 3, 3, 3]
    var rows = SparkTests.spark().read().parquet(tmp.resolve("out").toString()).select("shape").collectAsList();
    assertThat(rows).hasSize(2).allSatisfy(row -> assertThat(row.getList(0)).containsExactly(3, 2, 2, 2));
    conf = HardeningTest.identity(in, tmp.resolve("out2"));
    conf.put("spark.volpool.pipeline", "avgpool3d");
    r = SparkTests.run(conf);
    assertThat(r.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(r.err()).contains("missing setting spark.volpool.avgpool3d.kernelSize: the pipeline has avgpool3d, whose"
        + " kernel_size has no default");
  }

  // G. the weights' header is checked before the file is read: a huge file is refused at once
  @Test
  void aHugeWeightsFileIsRefusedFromItsHeader(@TempDir Path tmp) throws Exception {
    Path in = input(tmp);
    Path huge = tmp.resolve("huge.safetensors");
    try (var f = new java.io.RandomAccessFile(huge.toFile(), "rw")) {
      f.setLength(20L << 30); // sparse: 20 GiB of zeros
    }
    Path model = JobEndToEndTest.SEED.model(); // the golden fused_seed model (also where the module is not the working directory)
    Path padded = tmp.resolve("padded.safetensors");
    Files.copy(model, padded);
    try (var f = new java.io.RandomAccessFile(padded.toFile(), "rw")) {
      f.setLength(f.length() + (8L << 30)); // a real header, 8 GiB of trailing bytes
    }
    Map<String, String> expected = Map.of(huge.toString(), "header length 0 is outside 2..",
        padded.toString(), "(the tensors must fill the data section exactly)");
    for (var e : expected.entrySet()) {
      Map<String, String> conf = HardeningTest.identity(in, tmp.resolve("out"), "pipeline", "fused",
          "fused.weights", e.getKey());
      long t0 = System.nanoTime();
      SparkTests.Result r = SparkTests.run(conf);
      assertThat(r.code()).as(e.getKey() + ": " + r.err()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
      assertThat(r.err()).contains("spark.volpool.fused.weights: " + e.getKey() + ": not a usable safetensors file")
          .contains(e.getValue()).doesNotContain("ran out of memory");
      assertThat((System.nanoTime() - t0) / 1e9).as("refused from the header, not after reading GBs").isLessThan(20);
    }
  }

  // E. a codec volpool cannot read: exit 3 naming the file and the codec, before any work
  @Test
  void aBrotliFileIsABadInputNamingFileAndCodec(@TempDir Path tmp) throws Exception {
    Path in = input(tmp);
    Path file;
    try (var s = Files.list(in)) {
      file = s.filter(p -> p.getFileName().toString().endsWith(".parquet")).findFirst().orElseThrow();
    }
    // the same file with its footer saying BROTLI (what pyarrow's compression='brotli' writes there)
    byte[] b = Files.readAllBytes(file);
    int footerLen = java.nio.ByteBuffer.wrap(b, b.length - 8, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt();
    int footerAt = b.length - 8 - footerLen;
    org.apache.parquet.format.FileMetaData md = org.apache.parquet.format.Util.readFileMetaData(
        new java.io.ByteArrayInputStream(b, footerAt, footerLen));
    for (org.apache.parquet.format.RowGroup g : md.getRow_groups()) {
      for (org.apache.parquet.format.ColumnChunk c : g.getColumns()) {
        c.getMeta_data().setCodec(org.apache.parquet.format.CompressionCodec.BROTLI);
      }
    }
    java.io.ByteArrayOutputStream footer = new java.io.ByteArrayOutputStream();
    org.apache.parquet.format.Util.writeFileMetaData(md, footer);
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    out.write(b, 0, footerAt);
    footer.writeTo(out);
    out.write(java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(footer.size()).array());
    out.write("PAR1".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    Files.write(file, out.toByteArray());
    SparkTests.Result r = SparkTests.run(HardeningTest.identity(in, tmp.resolve("out")));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("volpool: FAILED: " + file.toUri().toString().replace("file:///", "file:/"))
        .contains("is compressed with BROTLI, which volpool cannot read").doesNotContain("unexpected error")
        .doesNotContain("\tat ");
  }

  // C. a symbolic link cycle in the input is refused, not followed
  @Test
  void symlinkCyclesInTheInputAreRefused(@TempDir Path tmp) throws Exception {
    Path in = input(tmp);
    Files.createDirectories(in.resolve("sub"));
    Files.createSymbolicLink(in.resolve("sub/loop"), Path.of(".."));
    Files.createSymbolicLink(in.resolve("sub/loop2"), in);
    long t0 = System.nanoTime();
    SparkTests.Result r = SparkTests.run(HardeningTest.identity(in, tmp.resolve("out")));
    assertThat(r.code()).as(r.err()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    assertThat(r.err()).contains("is a symbolic link to " + in.toRealPath() + ", a folder the input already holds")
        .contains("its volumes would be read more than once");
    assertThat(tmp.resolve("out")).doesNotExist();
    assertThat((System.nanoTime() - t0) / 1e9).isLessThan(30);
    // a link to a folder outside the input is followed, as before
    Files.delete(in.resolve("sub/loop"));
    Files.delete(in.resolve("sub/loop2"));
    Path other = tmp.resolve("other");
    HardeningTest.volumes("c").coalesce(1).write().parquet(other.toString());
    Files.createSymbolicLink(in.resolve("sub/more"), other);
    r = SparkTests.run(HardeningTest.identity(in, tmp.resolve("out")));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("volumes       3 in, 3 out");
  }

  // D. an empty commit lock (its owner could not write it on a full disk) is a dead run's, removed at the start
  @Test
  void anEmptyCommitLockIsRemovedAtTheStart(@TempDir Path tmp) throws Exception {
    Path in = input(tmp);
    Path lock = tmp.resolve(".out.volpool-commit.lock");
    Files.createFile(lock);
    Files.setLastModifiedTime(lock, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 60_000));
    long t0 = System.nanoTime();
    SparkTests.Result r = SparkTests.run(HardeningTest.identity(in, tmp.resolve("out")));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat((System.nanoTime() - t0) / 1e9).as("no wait for the 2-minute staleness").isLessThan(60);
    assertThat(lock).doesNotExist();
  }

  // 3. two runs on one output: the loser's message is true and the status stays the winner's
  @Test
  void theLoserOfARaceKeepsTheWinnersStatus(@TempDir Path tmp) throws Exception {
    Path in = input(tmp);
    Path out = tmp.resolve("out");
    SparkTests.Result won = SparkTests.run(HardeningTest.identity(in, out));
    assertThat(won.code()).isZero();
    Path status = tmp.resolve(".out.volpool-status.json");
    String winner = Files.readString(status);
    // a run that started before the winner finished and lost: its failure must not replace the winner's status
    var settings = new io.volpool.job.config.JobSettings(HardeningTest.identity(in, out));
    RunStatus.write(settings, null, 1, "output appeared", null, java.time.Instant.now().minusSeconds(60),
        new java.io.PrintStream(new java.io.ByteArrayOutputStream()));
    assertThat(Files.readString(status)).isEqualTo(winner);
    // a later run refused before it took the output (it exists): the status stays the output's writer's
    SparkTests.Result later = SparkTests.run(HardeningTest.identity(in, out));
    assertThat(later.code()).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(Files.readString(status)).isEqualTo(winner);
    try (var s = Files.list(tmp)) {
      assertThat(s.map(p -> p.getFileName().toString())).noneMatch(n -> n.endsWith(".tmp"));
    }
  }

  // H. Ctrl-C: the process exits 130 and the status file says so
  @Test
  void sigintExits130AndTheStatusSaysSo(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("many");
    // fused on one CPU thread: 1,024 volumes take 8 s or more, so the signal lands while the job runs
    SampleData.write(SparkTests.spark(), in.toString(), 1024, 16);
    Path out = tmp.resolve("out");
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "output", out.toString(), "pipeline", "fused",
        "fused.weights", JobEndToEndTest.SEED.model().toString(), "device", "cpu", "spark.executor.heartbeatInterval", "500ms");
    ChildJvm.Child c = ChildJvm.start("2g", "local[1]", conf, tmp.resolve("child.log"));
    long deadline = System.nanoTime() + 120_000_000_000L;
    // a task has finished a batch: the job is running. The first progress line ("0 of 1,024") comes while Spark
    // still starts; a SIGINT sent then was lost twice on 2026-12-07 (exit 0, the job ran to its end)
    java.util.regex.Pattern running = java.util.regex.Pattern.compile("volpool progress: [1-9]");
    while (!running.matcher(c.output()).find() && System.nanoTime() < deadline && c.process().isAlive()) {
      Thread.sleep(100);
    }
    assertThat(c.output()).as("the job was running").containsPattern(running);
    new ProcessBuilder("kill", "-INT", String.valueOf(c.process().pid())).start().waitFor();
    int code = c.waitFor(60);
    assertThat(code).as(c.output()).isEqualTo(130);
    assertThat(c.output()).contains("volpool: FAILED: stopped by SIGINT (Ctrl-C) while the job ran (exit code 130)");
    Map<?, ?> st = RunStatus.read(RunStatus.path(new org.apache.hadoop.fs.Path(out.toUri())),
        new org.apache.hadoop.conf.Configuration());
    assertThat(st.get("exit_code")).isEqualTo(130);
    assertThat(String.valueOf(st.get("message"))).contains("stopped by SIGINT");
    assertThat(out).doesNotExist();
  }

  // B. a mapped scratch file on a full spark.local.dir: the task fails naming it, the executor lives
  @Test
  void aFullLocalDirIsNamedNotAJvmExit(@TempDir Path tmp) throws Exception {
    Path small = tmp.resolve("small-local-dir");
    Files.createDirectories(small);
    Process m = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small.toString())
        .redirectErrorStream(true).start();
    boolean mounted = m.waitFor() == 0;
    org.junit.jupiter.api.Assumptions.assumeTrue(mounted, "cannot mount a 4 MiB tmpfs here (needs root): "
        + new String(m.getInputStream().readAllBytes()));
    try {
      // one 24 MiB .npy volume under a 16 MiB budget runs in slabs; its output planes go to a mapped scratch file
      Path in = tmp.resolve("npy");
      float[] x = new float[3 * 64 * 128 * 256];
      java.util.Arrays.fill(x, 1f);
      SparkTests.writeNpy(in.resolve("big.npy"), io.volpool.format.NpyArray.of(new long[] {3, 64, 128, 256}, x));
      Map<String, String> conf = SparkTests.conf("input", in.toString(), "input.format", "npy", "output",
          tmp.resolve("out").toString(), "pipeline", "identity", "memory.budget", "16m", "device", "cpu",
          "spark.local.dir", small.toString());
      ChildJvm.Child c = ChildJvm.start("1g", "local[1]", conf, tmp.resolve("child.log"));
      int code = c.waitFor(120);
      assertThat(code).as(c.output()).isNotEqualTo(50).isEqualTo(VolpoolMain.EXIT_FAILED);
      assertThat(c.output()).contains("volpool: FAILED: ").contains(small.toString()).contains("spark.local.dir")
          .doesNotContain("unexpected error");
    } finally {
      new ProcessBuilder("umount", small.toString()).start().waitFor();
    }
  }

  // 7. .npy input shows its total; 13. the summary counts in the singular for one; a missing properties file
  @Test
  void npyProgressHasATotalAndSmallThingsReadRight(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("npy");
    for (int i = 0; i < 3; i++) {
      float[] x = new float[2 * 3 * 4 * 4 * 4];
      SparkTests.writeNpy(in.resolve("f" + i + ".npy"), io.volpool.format.NpyArray.of(new long[] {2, 3, 4, 4, 4}, x));
    }
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "input.format", "npy", "output",
        tmp.resolve("out").toString(), "pipeline", "identity", "device", "cpu");
    ChildJvm.Child c = ChildJvm.start("1g", "local[1]", conf, tmp.resolve("child.log"));
    assertThat(c.waitFor(120)).as(c.output()).isZero();
    assertThat(c.output()).contains("volpool progress: 6 of 6 volumes (100.0%)");
    SparkTests.Result one = SparkTests.run(HardeningTest.identity(input(tmp), tmp.resolve("out1")));
    assertThat(one.out()).containsPattern("volumes       2 in, 2 out, 1 batch, 1 file\\b");
    java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
    int code = VolpoolMain.run(new String[] {"--properties-file", tmp.resolve("nope.properties").toString()},
        new java.io.PrintStream(new java.io.ByteArrayOutputStream()), new java.io.PrintStream(err, true));
    assertThat(code).isEqualTo(VolpoolMain.EXIT_SETTINGS);
    assertThat(err.toString()).contains("--properties-file " + tmp.resolve("nope.properties") + ": file not found");
  }

  // 6. a bad record's one line is not buried under Spark's task-failure traces, and names its file once
  @Test
  void aBadRecordIsOneLineNotBuriedUnderSparksTraces(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("npy");
    Files.createDirectories(in);
    Path bad = in.resolve("x.npy");
    Files.write(bad, new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 10, 0, '{', '}', ' ', ' ', ' ', ' ', ' ',
        ' ', ' ', '\n'});
    Map<String, String> conf = SparkTests.conf("input", in.toString(), "input.format", "npy", "output",
        tmp.resolve("out").toString(), "pipeline", "identity", "device", "cpu");
    ChildJvm.Child c = ChildJvm.start("1g", "local[1]", conf, tmp.resolve("child.log"));
    assertThat(c.waitFor(120)).as(c.output()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
    String out = c.output();
    String before = out.substring(0, out.indexOf("volpool: FAILED: bad record"));
    assertThat(before).as("what the console shows before the FAILED line").doesNotContain("\tat org.apache.spark")
        .doesNotContain("Lost task").doesNotContain("Exception in task");
    assertThat(before.lines().count()).isLessThan(30);
    String line = out.lines().filter(l -> l.startsWith("volpool: FAILED: bad record")).findFirst().orElseThrow();
    assertThat(line.split(java.util.regex.Pattern.quote(bad.toString()), -1)).as(line + ": the file named once").hasSize(2);
  }

  // 4. the identity pipeline streams a volume run in slabs to rows, as every other pipeline does (no 2 GiB value)
  @Test
  void theIdentityPipelineStreamsASlabbedVolumeToRows(@TempDir Path tmp) throws Exception {
    long[] shape = {3, 48, 128, 128};
    float[] x = new float[3 * 48 * 128 * 128];
    for (int i = 0; i < x.length; i++) {
      x[i] = i * 0.25f - 7f;
    }
    SparkTests.writeNpy(tmp.resolve("in/big.npy"), io.volpool.format.NpyArray.of(shape, x));
    Path out = tmp.resolve("rows");
    // streamed, the output never lies whole anywhere: not in a scratch file of spark.local.dir, here a 4 MiB tmpfs
    // for a 9 MiB volume (the whole-volume way mapped all of its output there, and was refused past 2 GiB)
    Path small = Files.createDirectories(tmp.resolve("small-local-dir"));
    Process m = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small.toString())
        .redirectErrorStream(true).start();
    org.junit.jupiter.api.Assumptions.assumeTrue(m.waitFor() == 0, "cannot mount a 4 MiB tmpfs here (needs root): "
        + new String(m.getInputStream().readAllBytes()));
    try {
      ChildJvm.Child c = ChildJvm.start("1g", "local[1]", SparkTests.conf("input", tmp.resolve("in").toString(),
          "input.format", "npy", "output", out.toString(), "output.format", "parquet", "output.layout", "rows",
          "output.rowBytes", "1m", "pipeline", "identity", "memory.budget", "16m", "device", "cpu", "spark.local.dir",
          small.toString()), tmp.resolve("child.log"));
      assertThat(c.waitFor(120)).as(c.output()).isZero();
      assertThat(c.output()).contains("1 slabbed");
    } finally {
      new ProcessBuilder("umount", small.toString()).start().waitFor();
    }
    var rows = SparkTests.spark().read().parquet(out.toString()).selectExpr("d0", "d1", "data").orderBy("d0").collectAsList();
    assertThat(rows).as("rows of at most 1 MiB: 5 planes each").hasSize(10);
    float[] back = new float[x.length];
    int plane = 128 * 128;
    for (var row : rows) {
      int d0 = row.getInt(0);
      int n = row.getInt(1) - d0;
      java.nio.FloatBuffer f = java.nio.ByteBuffer.wrap((byte[]) row.get(2)).order(java.nio.ByteOrder.LITTLE_ENDIAN)
          .asFloatBuffer();
      for (int c = 0; c < 3; c++) {
        f.get(back, c * 48 * plane + d0 * plane, n * plane);
      }
    }
    int mismatch = java.util.Arrays.mismatch(back, x);
    assertThat(mismatch).as("first element where the rows differ from the volume"
        + (mismatch >= 0 ? ": " + back[mismatch] + " instead of " + x[mismatch] : "")).isEqualTo(-1);
  }

  // 13. an id that names a .npy file keeps its name as .npy output (not big.npy.npy); ids colliding on one name are refused
  @Test
  void anIdNamingANpyFileKeepsItsNameAndCollidingIdsAreRefused(@TempDir Path tmp) throws Exception {
    // volumes stored across rows (what .npy output takes), one of them with the id a .npy input gives
    HardeningTest.volumes("big.npy", "small").coalesce(1).write().parquet(tmp.resolve("flat").toString());
    SparkTests.Result rows = SparkTests.run(HardeningTest.identity(tmp.resolve("flat"), tmp.resolve("in"), "output.layout", "rows"));
    assertThat(rows.code()).as(rows.err()).isZero();
    SparkTests.Result r = SparkTests.run(HardeningTest.identity(tmp.resolve("in"), tmp.resolve("out"), "output.format", "npy"));
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(HardeningTest.names(tmp.resolve("out"))).contains("big.npy", "small.npy").doesNotContain("big.npy.npy");
    // "v" and "v.npy" both name v.npy: in one task, and in two tasks (the commit finds it, where it kept one silently)
    HardeningTest.volumes("v", "v.npy").coalesce(1).write().parquet(tmp.resolve("flat2").toString());
    assertThat(SparkTests.run(HardeningTest.identity(tmp.resolve("flat2"), tmp.resolve("in2"), "output.layout", "rows")).code()).isZero();
    for (String tasks : new String[] {"134217728", "1"}) {
      // a JVM of its own: the task size is the SparkContext's (one task, or one per volume)
      Path out = tmp.resolve("out2-" + tasks);
      ChildJvm.Child c = ChildJvm.start("1g", tasks.equals("1") ? "local[2]" : "local[1]",
          HardeningTest.identity(tmp.resolve("in2"), out, "output.format",
          "npy", "output.sharedFilesystem", "true", "spark.sql.files.maxPartitionBytes", tasks,
          "spark.sql.files.openCostInBytes", "0", "device", "cpu"), tmp.resolve("child-" + tasks + ".log"));
      assertThat(c.waitFor(120)).as(c.output()).isEqualTo(VolpoolMain.EXIT_BAD_RECORD);
      assertThat(c.output()).as(tasks).contains(tasks.equals("1") ? "2 task(s)" : "1 task(s)").contains("v.npy")
          .contains("ids must be unique").contains("(an id and the same id with .npy name the same one)");
      assertThat(out).doesNotExist();
    }
  }

  // 13. a file without an id column gets ids as a .npy file's volumes do: its path and row, path[i]
  @Test
  void aFileWithoutIdsGivesItsVolumesPathAndRow(@TempDir Path tmp) throws Exception {
    java.util.List<org.apache.spark.sql.Row> rows = new java.util.ArrayList<>();
    for (int i = 0; i < 3; i++) {
      float[] v = new float[2 * 2 * 4 * 4];
      java.util.Arrays.fill(v, i);
      java.util.List<Float> l = new java.util.ArrayList<>();
      for (float f : v) {
        l.add(f);
      }
      rows.add(org.apache.spark.sql.RowFactory.create(l));
    }
    var schema = new org.apache.spark.sql.types.StructType().add("tensor",
        org.apache.spark.sql.types.DataTypes.createArrayType(org.apache.spark.sql.types.DataTypes.FloatType, false), false);
    Path in = tmp.resolve("in/day=1");
    SparkTests.spark().createDataFrame(rows, schema).coalesce(1).write().parquet(in.toString());
    String file;
    try (var s = Files.list(in)) {
      file = s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".parquet")).findFirst().orElseThrow();
    }
    for (String layout : new String[] {"volume", "rows"}) {
      Path out = tmp.resolve("out-" + layout);
      SparkTests.Result r = SparkTests.run(HardeningTest.identity(tmp.resolve("in"), out, "input.tensorShape", "2,2,4,4",
          "output.layout", layout));
      assertThat(r.code()).as(r.err()).isZero();
      var got = SparkTests.spark().read().option("recursiveFileLookup", "true").parquet(out.toString())
          .select("id", "data").collectAsList();
      java.util.Map<String, Float> first = new java.util.TreeMap<>();
      for (var row : got) {
        byte[] d = (byte[]) row.get(1);
        first.put(row.getString(0), java.nio.ByteBuffer.wrap(d).order(java.nio.ByteOrder.LITTLE_ENDIAN).getFloat(0));
      }
      assertThat(first).as(layout).containsExactlyInAnyOrderEntriesOf(java.util.Map.of("day=1/" + file + "[0]", 0f,
          "day=1/" + file + "[1]", 1f, "day=1/" + file + "[2]", 2f));
    }
  }
}
