package io.volpool.job.commit;

import java.io.FileNotFoundException;
import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.s3a.S3AFileSystem;

/**
 * S3 multipart uploads through S3A: aborting them, and joining a file's parts by copies inside S3. Apart
 * from {@link MagicCommit} because it names S3A's and the AWS SDK's types: hadoop-aws is on the class
 * path only where s3a:// is used, and this class is loaded only then. Stateless.
 */
public final class S3aUploads {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(S3aUploads.class);

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

  /** S3's least part of a multipart upload but the last, and its most parts. */
  static final long MIN_PART = 5L << 20;
  static final int MAX_PARTS = 10_000;
  /** The most bytes one UploadPartCopy copies is 5 GiB: larger parts are copied in pieces of at most this. */
  static final long COPY_PIECE = 4L << 30;

  /**
   * Joins one .npy file's committed parts, in order, into {@code target} (a join of
   * {@link io.volpool.io.npy.PartsJoin}): on S3A, one multipart upload whose parts are copied by S3 from
   * the part objects (UploadPartCopy: no byte through the driver), completed at once (the file appears
   * whole) or aborted on failure. Parts that S3 cannot take as they are (one but the last under 5 MiB,
   * more than 10,000 pieces) are joined through the driver instead ({@code PartsJoin.streamed}), as on
   * any other filesystem.
   */
  public static void joinByCopies(FileSystem fs, java.util.List<org.apache.hadoop.fs.Path> parts,
      org.apache.hadoop.fs.Path target) throws IOException {
    long[] len = new long[parts.size()];
    long pieces = 0;
    boolean fit = fs instanceof S3AFileSystem && !parts.isEmpty();
    for (int i = 0; i < parts.size() && fit; i++) {
      len[i] = fs.getFileStatus(parts.get(i)).getLen();
      pieces += Math.max(1, (len[i] + COPY_PIECE - 1) / COPY_PIECE);
      fit = (i == parts.size() - 1 || len[i] >= MIN_PART) && len[i] > 0 && pieces <= MAX_PARTS;
    }
    if (!fit) {
      LOG.info("volpool: joining the {} parts of {} through the driver (S3 copies parts of 5 MiB or more but the last,"
          + " and at most {} pieces)", parts.size(), target, MAX_PARTS);
      io.volpool.io.npy.PartsJoin.streamed(fs, parts, target);
      return;
    }
    String through = objectSettings(fs.getConf());
    if (through != null) {
      // the SDK's own requests would not carry them: S3A's output stream does
      LOG.info("volpool: joining the {} parts of {} through the driver, so that S3A applies {}", parts.size(), target,
          through);
      io.volpool.io.npy.PartsJoin.streamed(fs, parts, target);
      return;
    }
    S3AFileSystem s3 = (S3AFileSystem) fs;
    software.amazon.awssdk.services.s3.S3Client client = s3.getS3AInternals().getAmazonS3Client("volpool: join .npy parts");
    String bucket = s3.getBucket();
    String key = s3.pathToKey(s3.makeQualified(target));
    String uploadId = client.createMultipartUpload(b -> b.bucket(bucket).key(key)).uploadId();
    // a driver killed from here on leaves this upload: invisible, but stored until aborted
    LOG.info("volpool: joining the {} parts of {} by copies inside S3 (multipart upload {}; if this run dies before"
        + " it completes: hadoop s3guard uploads -abort -force {})", parts.size(), target, uploadId, target);
    long total = java.util.Arrays.stream(len).sum();
    try {
      java.util.List<software.amazon.awssdk.services.s3.model.CompletedPart> done = new java.util.ArrayList<>();
      for (int i = 0; i < parts.size(); i++) {
        String source = s3.pathToKey(s3.makeQualified(parts.get(i)));
        long k = Math.max(1, (len[i] + COPY_PIECE - 1) / COPY_PIECE);
        long piece = (len[i] + k - 1) / k;
        for (long at = 0; at < len[i]; at += piece) {
          int number = done.size() + 1;
          String range = k == 1 ? null : "bytes=" + at + "-" + (Math.min(len[i], at + piece) - 1);
          String etag = client.uploadPartCopy(b -> b.sourceBucket(bucket).sourceKey(source).destinationBucket(bucket)
              .destinationKey(key).uploadId(uploadId).partNumber(number).copySourceRange(range))
              .copyPartResult().eTag();
          done.add(software.amazon.awssdk.services.s3.model.CompletedPart.builder().partNumber(number).eTag(etag).build());
        }
      }
      try {
        client.completeMultipartUpload(b -> b.bucket(bucket).key(key).uploadId(uploadId)
            .multipartUpload(m -> m.parts(done)));
      } catch (software.amazon.awssdk.services.s3.model.NoSuchUploadException e) {
        // a retry of a completion whose answer was lost: done if the file is there, whole
        if (!fs.exists(target) || fs.getFileStatus(target).getLen() != total) {
          throw e;
        }
      }
      LOG.info("volpool: joined the {} parts of {} by copies inside S3 ({} pieces, {} bytes)", parts.size(), target,
          done.size(), total);
    } catch (RuntimeException e) {
      try {
        client.abortMultipartUpload(b -> b.bucket(bucket).key(key).uploadId(uploadId));
      } catch (RuntimeException again) {
        e.addSuppressed(again);
      }
      throw new IOException("could not join the " + parts.size() + " parts of " + target + " by copies inside S3: " + e, e);
    }
  }

  /**
   * The S3A settings for new objects that a join by the SDK's own requests would not apply (encryption, an ACL,
   * a storage class, requester pays), named, or null when none is set.
   */
  static String objectSettings(org.apache.hadoop.conf.Configuration conf) {
    java.util.List<String> set = new java.util.ArrayList<>();
    for (String k : new String[] {"fs.s3a.encryption.algorithm", "fs.s3a.server-side-encryption-algorithm",
        "fs.s3a.acl.default", "fs.s3a.create.storage.class"}) {
      String v = conf.getTrimmed(k, "");
      if (!v.isEmpty() && !v.equalsIgnoreCase("none")) {
        set.add(k + "=" + v);
      }
    }
    if (conf.getBoolean("fs.s3a.requester.pays.enabled", false)) {
      set.add("fs.s3a.requester.pays.enabled=true");
    }
    return set.isEmpty() ? null : String.join(", ", set);
  }
}
