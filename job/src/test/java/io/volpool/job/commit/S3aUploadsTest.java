package io.volpool.job.commit;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/** Which S3A settings send a join of .npy parts through the driver (the SDK's copies would not apply them). */
class S3aUploadsTest {
  @Test
  void encryptionAnAclAStorageClassOrRequesterPaysJoinThroughTheDriver() {
    Configuration c = new Configuration(false);
    assertThat(S3aUploads.objectSettings(c)).as("nothing set: copies inside S3").isNull();
    c.set("fs.s3a.encryption.algorithm", "none");
    assertThat(S3aUploads.objectSettings(c)).as("encryption none").isNull();
    c.set("fs.s3a.encryption.algorithm", "SSE-KMS");
    assertThat(S3aUploads.objectSettings(c)).isEqualTo("fs.s3a.encryption.algorithm=SSE-KMS");
    c = new Configuration(false);
    c.set("fs.s3a.acl.default", "BucketOwnerFullControl");
    c.setBoolean("fs.s3a.requester.pays.enabled", true);
    assertThat(S3aUploads.objectSettings(c)).contains("fs.s3a.acl.default=BucketOwnerFullControl")
        .contains("fs.s3a.requester.pays.enabled=true");
    c = new Configuration(false);
    c.set("fs.s3a.create.storage.class", "intelligent_tiering");
    assertThat(S3aUploads.objectSettings(c)).contains("storage.class");
  }
}
