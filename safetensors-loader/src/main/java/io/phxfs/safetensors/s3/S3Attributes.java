package io.phxfs.safetensors.s3;

import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;

/**
 * An object (a regular file of its size) or a prefix (a directory). S3 keeps no times the
 * loader needs: every time is the epoch. The file key is the entity tag, where there is one.
 */
record S3Attributes(boolean isDirectory, long size, String etag) implements BasicFileAttributes {
    private static final FileTime EPOCH = FileTime.fromMillis(0);

    static S3Attributes directory(S3Path p) {
        return new S3Attributes(true, 0, null);
    }

    static S3Attributes object(S3Path p, S3Client.ObjectInfo info) {
        return new S3Attributes(false, info.size(), info.etag());
    }

    @Override
    public FileTime lastModifiedTime() {
        return EPOCH;
    }

    @Override
    public FileTime lastAccessTime() {
        return EPOCH;
    }

    @Override
    public FileTime creationTime() {
        return EPOCH;
    }

    @Override
    public boolean isRegularFile() {
        return !isDirectory;
    }

    @Override
    public boolean isSymbolicLink() {
        return false;
    }

    @Override
    public boolean isOther() {
        return false;
    }

    @Override
    public Object fileKey() {
        return etag;
    }
}
