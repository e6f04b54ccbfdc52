package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import org.junit.jupiter.api.Test;

/** The one line a full disk gives: the file and its filesystem, never a stack frame's module path taken for a file. */
class IoFailureTest {
  @Test
  void aFullDiskNamesTheFileAWriterNamedAndNotAStackFrame() {
    // a task's failure as the driver gets it: the executor's message, then its stack, quoted
    IOException quoted = new IOException("Job aborted due to stage failure: Task 3 failed 1 times, most recent failure:"
        + " java.io.IOException: No space left on device\n\tat java.base/sun.nio.ch.FileDispatcherImpl.pwrite0(Native"
        + " Method)\n\tat java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)");
    String line = VolpoolMain.ioFailure(quoted);
    assertThat(line).startsWith("the disk is full: IOException: Job aborted").doesNotContain("writing or reading /");
    // a writer that names its file (the .npy written in place does): the file, and its filesystem's figures
    IOException named = new IOException("/tmp/out/.o.volpool-staging-1/_volpool_inplace/v.npy: No space left on device");
    assertThat(VolpoolMain.ioFailure(named)).startsWith("the disk is full writing or reading /tmp/out/.o.volpool-staging-1/"
        + "_volpool_inplace/v.npy (filesystem ").contains(" MiB free of ");
  }
}
