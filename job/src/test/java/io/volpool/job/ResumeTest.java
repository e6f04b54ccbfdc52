package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spark.volpool.output.mode=resume}, as a scheduler's retry uses it: the driver of a run is killed
 * (SIGKILL) once about half of its tasks committed; the resumed run keeps the killed run's committed
 * tasks (counted in its summary), runs only the rest, and publishes an output equal to an uninterrupted
 * run's, volume for volume, leaving nothing of either run beside it. A resume with other settings is
 * refused naming the setting; a resume of a complete output runs nothing.
 */
class ResumeTest {
  static Map<String, String> conf(Path in, Path out) {
    Map<String, String> conf = JobEndToEndTest.seedConf(in, "parquet", out);
    conf.put("spark.volpool.fused.weights", Path.of("../conf/models/fused_seed.safetensors").toAbsolutePath().toString());
    conf.put("spark.volpool.device", "cpu");
    // about 16 tasks of 128 volumes each: a kill at half leaves several committed, several not
    conf.put("spark.sql.files.maxPartitionBytes", String.valueOf(24L << 20));
    return conf;
  }

  static JsonNode summary(Path out) throws Exception {
    return new ObjectMapper().readTree(out.resolve(VolpoolJob.SUMMARY_FILE).toFile());
  }

  /** Starts a run and kills its JVM once at least {@code half} tasks committed; returns how many had. */
  static int killAfter(Path tmp, Map<String, String> conf, Path out, int half, String name) throws Exception {
    ChildJvm.Child run = ChildJvm.start("2g", "local[2]", conf, tmp.resolve(name + ".log"));
    int committed = run.awaitCommits(() -> CrashTest.committedTasks(out), half);
    run.process().destroyForcibly().waitFor();
    assertThat(out).as("no output before the commit").doesNotExist();
    return committed;
  }

  @Test
  void aRunKilledAtHalfIsResumedFromItsCommittedTasksAndEqualsACleanRun(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), in.toString(), 2048, 8);
    Path clean = tmp.resolve("clean/pooled");
    ChildJvm.Child c = ChildJvm.start("2g", "local[2]", conf(in, clean), tmp.resolve("clean.log"));
    assertThat(c.waitFor(300)).as(c.output()).isZero();
    Map<String, String> want = CrashTest.parquetChecksum(clean);
    int tasks = summary(clean).get("files_out").asInt();
    assertThat(tasks).as("tasks of the clean run (one file each)").isGreaterThanOrEqualTo(8);

    Path out = tmp.resolve("out/pooled");
    Map<String, String> resume = conf(in, out);
    resume.put("spark.volpool.output.mode", "resume");
    int committed = killAfter(tmp, resume, out, tasks / 2, "killed");
    System.out.println("resume test: killed with " + committed + " of " + tasks + " tasks committed");

    ChildJvm.Child r = ChildJvm.start("2g", "local[2]", resume, tmp.resolve("resumed.log"));
    assertThat(r.waitFor(300)).as(r.output()).isZero();
    JsonNode s = summary(out);
    JsonNode resumed = s.get("resumed");
    assertThat(resumed).as("the summary says what was resumed: " + s).isNotNull();
    long kept = resumed.get("tasks_kept").asLong();
    assertThat(kept).as("tasks kept: at least those committed at the kill").isGreaterThanOrEqualTo(committed);
    assertThat(resumed.get("tasks_run").asLong()).as("tasks run again: at most the uncommitted ones")
        .isEqualTo(tasks - kept).isLessThanOrEqualTo(tasks - committed);
    assertThat(s.get("volumes_out").asLong()).as("the whole input is in the output").isEqualTo(2048);
    assertThat(s.get("volumes_in").asLong() + resumed.get("volumes_kept").asLong())
        .as("volumes read now plus volumes kept: each once").isEqualTo(2048);
    assertThat(s.get("volumes_in").asLong()).as("read now: only what the killed run had not committed")
        .isLessThanOrEqualTo(2048L * (tasks - committed) / tasks + 128);
    assertThat(CrashTest.parquetChecksum(out)).as("the resumed output, volume for volume").isEqualTo(want);
    assertThat(SparkTests.spark().read().parquet(out.toString()).count()).as("each volume once").isEqualTo(2048);
    assertThat(CrashTest.leftovers(out.getParent())).as("nothing of either run beside the output").isEmpty();
    assertThat(out.resolve("_volpool_manifest.json")).as("the output's manifest").exists();

    // a resume of the complete output: nothing to do, and the output stays as it is; what a run killed after its
    // output landed left beside it (its owner file, manifest, the old output it replaced) is removed
    long before = Files.getLastModifiedTime(out.resolve(VolpoolJob.SUMMARY_FILE)).toMillis();
    Path parent = out.getParent();
    Files.writeString(parent.resolve(".pooled.volpool-staging-dead1.owner"), "ended=killed in its commit\n");
    Files.copy(out.resolve("_volpool_manifest.json"), parent.resolve(".pooled.volpool-staging-dead1.manifest.json"));
    Files.writeString(Files.createDirectories(parent.resolve(".pooled.volpool-staging-dead1.replaced"))
        .resolve("part-0.parquet"), "the old output");
    ChildJvm.Child again = ChildJvm.start("2g", "local[2]", resume, tmp.resolve("again.log"));
    assertThat(again.waitFor(300)).as(again.output()).isZero();
    assertThat(again.output()).contains("complete already");
    assertThat(CrashTest.leftovers(parent)).as("a dead run's files beside the complete output").isEmpty();
    assertThat(Files.getLastModifiedTime(out.resolve(VolpoolJob.SUMMARY_FILE)).toMillis()).isEqualTo(before);
  }

  /**
   * A run in mode=resume stopped by SIGTERM (a scheduler's stop) fails through Spark's job abort, which must not
   * remove what its tasks committed: the next resume keeps them, and the output holds every volume once.
   */
  @Test
  void aResumeModeRunStoppedBySigtermKeepsItsCommittedTasksForTheNextResume(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), in.toString(), 2048, 8);
    Path out = tmp.resolve("out/pooled");
    Map<String, String> resume = conf(in, out);
    resume.put("spark.volpool.output.mode", "resume");
    ChildJvm.Child run = ChildJvm.start("2g", "local[2]", resume, tmp.resolve("stopped.log"));
    int committed = run.awaitCommits(() -> CrashTest.committedTasks(out), 4);
    run.process().destroy(); // SIGTERM
    assertThat(run.process().waitFor(120, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    assertThat(run.process().exitValue()).as(run.output()).isEqualTo(143);
    assertThat(run.output()).contains("stays for a rerun with spark.volpool.output.mode=resume");
    assertThat(CrashTest.committedTasks(out)).as("committed tasks after the job abort").isGreaterThanOrEqualTo(committed);
    ChildJvm.Child r = ChildJvm.start("2g", "local[2]", resume, tmp.resolve("resumed.log"));
    assertThat(r.waitFor(300)).as(r.output()).isZero();
    JsonNode s = summary(out);
    assertThat(s.get("resumed").get("tasks_kept").asLong()).as(r.output()).isGreaterThanOrEqualTo(committed);
    assertThat(s.get("volumes_in").asLong() + s.get("resumed").get("volumes_kept").asLong()).isEqualTo(2048);
    // the printed summary says that volumes out counts the kept ones too
    assertThat(r.output()).contains("volumes       " + s.get("volumes_in").asLong() + " in (and "
        + s.get("resumed").get("volumes_kept").asLong() + " kept from the resumed run), 2048 out");
    assertThat(SparkTests.spark().read().parquet(out.toString()).count()).as("each volume once").isEqualTo(2048);
  }

  @Test
  void aResumeWithOtherSettingsIsRefusedNamingThem(@TempDir Path tmp) throws Exception {
    Path in = tmp.resolve("in");
    SampleData.write(SparkTests.spark(), in.toString(), 1024, 8);
    Path out = tmp.resolve("out/pooled");
    Map<String, String> resume = conf(in, out);
    resume.put("spark.volpool.output.mode", "resume");
    resume.put("spark.sql.files.maxPartitionBytes", String.valueOf(12L << 20));
    killAfter(tmp, resume, out, 2, "killed");
    Map<String, String> changed = new java.util.HashMap<>(resume);
    changed.put("spark.volpool.avgpool3d.stride", "3");
    ChildJvm.Child r = ChildJvm.start("2g", "local[2]", changed, tmp.resolve("changed.log"));
    assertThat(r.waitFor(300)).as("settings error: " + r.output()).isEqualTo(2);
    assertThat(r.output()).contains("spark.volpool.output.mode=resume").contains("volpool.pipeline was")
        .contains("stride=2").contains("stride=3");
    assertThat(out).doesNotExist();
    // the killed run's work is still there for a resume with its settings, and overwrite starts over
    changed.put("spark.volpool.output.mode", "overwrite");
    ChildJvm.Child o = ChildJvm.start("2g", "local[2]", changed, tmp.resolve("overwrite.log"));
    assertThat(o.waitFor(300)).as(o.output()).isZero();
    assertThat(summary(out).get("resumed")).as("overwrite keeps nothing").isNull();
    assertThat(CrashTest.leftovers(out.getParent())).isEmpty();
  }
}
