package io.volpool.job.commit;

import java.io.FileNotFoundException;
import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.s3a.S3AFileSystem;

/**
 * Aborts one S3 multipart upload through S3A. Apart from {@link MagicCommit} because it names
 * S3A's type: hadoop-aws is on the class path only where s3a:// is used, and this class is loaded
 * only then. Stateless.
 */
final class S3aUploads {
  private S3aUploads() {}

  /**
   * Aborts every multipart upload under {@code dir} (its key and below), found by listing them: the
   * only way to find an upload whose task died before it closed the file (the magic committer records
   * an upload when its file closes). Only for an output no live run writes to.
   *
   * @return the uploads aborted, or -1 when the store cannot list uploads (s3proxy's filesystem store
   *     answers ListMultipartUploads with 501)
   */
  static int abortUnder(FileSystem fs, org.apache.hadoop.fs.Path dir) throws IOException {
    S3AFileSystem s3 = (S3AFileSystem) fs;
    java.util.List<software.amazon.awssdk.services.s3.model.MultipartUpload> found = new java.util.ArrayList<>();
    try {
      org.apache.hadoop.fs.RemoteIterator<software.amazon.awssdk.services.s3.model.MultipartUpload> it =
          s3.listUploads(s3.pathToKey(dir) + "/");
      while (it.hasNext()) {
        found.add(it.next());
      }
    } catch (org.apache.hadoop.fs.s3a.AWSUnsupportedFeatureException e) {
      return -1;
    }
    int n = 0;
    for (software.amazon.awssdk.services.s3.model.MultipartUpload u : found) {
      if (abort(fs, u.key(), u.uploadId())) {
        n++;
      }
    }
    return n;
  }

  /** Aborts upload {@code uploadId} of {@code key}; false when it is not pending (completed or aborted already). */
  static boolean abort(FileSystem fs, String key, String uploadId) throws IOException {
    try {
      ((S3AFileSystem) fs).abortMultipartUpload(key, uploadId);
      return true;
    } catch (FileNotFoundException e) {
      return false;
    } catch (IOException | RuntimeException e) {
      if (String.valueOf(e).contains("NoSuchUpload") || String.valueOf(e.getCause()).contains("NoSuchUpload")) {
        return false;
      }
      throw e;
    }
  }
}
