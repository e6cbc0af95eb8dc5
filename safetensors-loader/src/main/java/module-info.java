/**
 * safetensors parsing and weight loading. Its API hands out io.phxfs.core types (Device,
 * RegisteredBuffer, PhoenixException), hence {@code requires transitive}. It maps files with
 * mmap through java.lang.foreign, so it needs native access of its own.
 */
module io.phxfs.safetensors {
    requires transitive io.phxfs.core;
    requires com.fasterxml.jackson.core;
    // s3://: the JDK's HTTP client, S3's XML answers, and the AWS SDK's SigV4 signer and profile files
    requires java.net.http;
    requires java.xml;
    requires software.amazon.awssdk.http.auth.aws;
    requires software.amazon.awssdk.http.auth.spi;
    requires software.amazon.awssdk.http;
    requires software.amazon.awssdk.identity.spi;
    requires software.amazon.awssdk.profiles;
    requires software.amazon.awssdk.utils;

    exports io.phxfs.safetensors;
    exports io.phxfs.safetensors.s3;

    provides java.nio.file.spi.FileSystemProvider with io.phxfs.safetensors.s3.S3FileSystemProvider;
}
