package io.volpool.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.JobContextImpl;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The rename commit's job commit publishes the files of committed tasks only: attempts that never
 * committed (a lost executor's, a losing speculative attempt's) stay out of the output, as in
 * Hadoop's own commit.
 */
class TimedCommitterTest {
  static final JobID JOB = new JobID("20261203", 7);

  static TaskAttemptContextImpl attempt(Configuration conf, int task, int attempt) {
    return new TaskAttemptContextImpl(conf, new TaskAttemptID(new TaskID(JOB, TaskType.REDUCE, task), attempt));
  }

  static void write(VolpoolOutputFormat.TimedCommitter c, String name, String text) throws Exception {
    Path work = Path.of(c.getWorkPath().toUri());
    Files.createDirectories(work.resolve("date=2026-12-03"));
    Files.writeString(work.resolve(name), text, StandardCharsets.UTF_8);
  }

  @Test
  void theJobCommitMovesOnlyCommittedTasksFiles(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("staging");
    Configuration conf = new Configuration(false);
    org.apache.hadoop.fs.Path o = new org.apache.hadoop.fs.Path(out.toUri());
    VolpoolOutputFormat.TimedCommitter job = new VolpoolOutputFormat.TimedCommitter(o, attempt(conf, 0, 0));
    job.setupJob(new JobContextImpl(conf, JOB));

    // task 0: its first attempt commits; its speculative second attempt wrote the same file and lost
    var t0 = attempt(conf, 0, 0);
    var c0 = new VolpoolOutputFormat.TimedCommitter(o, t0);
    c0.setupTask(t0);
    write(c0, "date=2026-12-03/part-r-00000.parquet", "committed 0");
    c0.commitTask(t0);
    var t0b = attempt(conf, 0, 1);
    var c0b = new VolpoolOutputFormat.TimedCommitter(o, t0b);
    c0b.setupTask(t0b);
    write(c0b, "date=2026-12-03/part-r-00000.parquet", "speculative, lost");
    // task 1: its attempt ran on an executor that died before it committed; its retry committed
    var t1 = attempt(conf, 1, 0);
    var c1 = new VolpoolOutputFormat.TimedCommitter(o, t1);
    c1.setupTask(t1);
    write(c1, "date=2026-12-03/part-r-00001.parquet", "half a fi");
    write(c1, "part-r-00001-extra.parquet", "only the dead attempt wrote this");
    var t1b = attempt(conf, 1, 1);
    var c1b = new VolpoolOutputFormat.TimedCommitter(o, t1b);
    c1b.setupTask(t1b);
    write(c1b, "date=2026-12-03/part-r-00001.parquet", "committed 1");
    c1b.commitTask(t1b);

    job.commitJob(new JobContextImpl(conf, JOB));

    java.util.Map<String, String> files = new java.util.TreeMap<>();
    try (Stream<Path> s = Files.walk(out)) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        files.put(out.relativize(p).toString(), Files.readString(p));
      }
    }
    assertThat(files).containsExactly(
        java.util.Map.entry("_SUCCESS", ""),
        java.util.Map.entry("date=2026-12-03/part-r-00000.parquet", "committed 0"),
        java.util.Map.entry("date=2026-12-03/part-r-00001.parquet", "committed 1"));
  }
}
