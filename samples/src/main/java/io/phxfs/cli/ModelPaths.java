package io.phxfs.cli;

import io.phxfs.safetensors.s3.S3FileSystemProvider;
import java.nio.file.Path;
import picocli.CommandLine.ITypeConverter;

/**
 * A model argument: {@code s3://bucket/prefix/} names a model in object storage (endpoint,
 * region and credentials by the AWS conventions), anything else a local path. picocli's own
 * Path conversion would make {@code s3://b/m} the relative local path {@code s3:/b/m}.
 */
public final class ModelPaths implements ITypeConverter<Path> {
    /** For picocli. */
    public ModelPaths() {
    }

    @Override
    public Path convert(String value) {
        return S3FileSystemProvider.pathOf(value);
    }
}
