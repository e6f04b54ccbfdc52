package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.io.parquet.ParquetSplit;
import io.volpool.io.parquet.ParquetVolumeInput;
import io.volpool.io.parquet.TensorLayout;
import io.volpool.job.io.InputPlanner;
import io.volpool.spark.TaskPlan;
import java.nio.file.Path;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each Parquet split carries the rows of its row groups, counted from the footers on the driver,
 * so a task's engine knows how many volumes it will get (its batches are never larger) and the
 * counts add up to the dataset's rows however the files are cut.
 */
class InputPlannerTest {
  @Test
  void splitsCarryTheirRowGroupsRowsAndTheyAddUpToTheDataset(@TempDir Path tmp) throws Exception {
    Path sample = tmp.resolve("sample");
    SampleData.write(SparkTests.spark(), sample.toString(), 300, 3);
    // the same rows in files of many row groups: volpool's own output, one row group per batch of 5
    Path in = tmp.resolve("in");
    Map<String, String> conf0 = JobEndToEndTest.seedConf(sample, "parquet", in);
    conf0.put("spark.volpool.batch.size", "5");
    conf0.put("spark.volpool.device", "cpu");
    SparkTests.Result r0 = SparkTests.run(conf0);
    assertThat(r0.code()).as(r0.err()).isZero();
    Configuration conf = new Configuration();
    // one task per file, and tasks cut at every row group (a tiny split size)
    for (long maxPartition : new long[] {128L << 20, 1}) {
      InputPlanner.Plan plan = InputPlanner.parquet(in.toString(), conf, maxPartition, 0, 1);
      TensorLayout layout;
      try (var r = org.apache.parquet.hadoop.ParquetFileReader.open(org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
          plan.first(), conf))) {
        layout = TensorLayout.detect(r.getFooter().getFileMetaData().getSchema(), null, null);
      }
      assertThat(plan.rows()).isEqualTo(300);
      long sum = 0;
      for (TaskPlan t : plan.tasks()) {
        long taskRows = 0;
        for (ParquetSplit s : t.splits()) {
          assertThat(s.rows()).as("rows of %s", s).isPositive();
          taskRows += s.rows();
        }
        try (ParquetVolumeInput input = new ParquetVolumeInput(t.splits(), layout, conf, new io.volpool.backend.PhaseTimes())) {
          assertThat(input.volumesAtMost()).isEqualTo(taskRows);
        }
        sum += taskRows;
      }
      assertThat(sum).as("rows over all splits, max partition %d bytes", maxPartition).isEqualTo(300);
      if (maxPartition == 1) {
        assertThat(plan.tasks().stream().mapToInt(t -> t.splits().size()).sum()).as("splits cut inside files")
            .isGreaterThan(10);
      }
    }
  }
}
