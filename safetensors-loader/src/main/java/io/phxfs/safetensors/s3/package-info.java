/**
 * Safetensors models in S3-compatible object storage: {@code s3://bucket/prefix/} read like a
 * model directory.
 *
 * <ul>
 *   <li>{@link io.phxfs.safetensors.s3.S3FileSystemProvider}: the {@code s3} scheme of
 *       java.nio.file, so that {@code WeightLoader.load(Path.of(URI.create("s3://b/m/")))} and
 *       {@code ModelFiles.open} locate, list and parse a model in a bucket with the same code
 *       (and the same checks and messages) as on a disk;</li>
 *   <li>{@link io.phxfs.safetensors.s3.S3Settings}: endpoint, region and credentials by the AWS
 *       conventions, and the reader's concurrency, range size and retries;</li>
 *   <li>{@link io.phxfs.safetensors.s3.S3Reads}: the tensor data as parallel ranged GETs, each
 *       landing in its destination buffer (or a pinned slot on its way to a device).</li>
 * </ul>
 */
package io.phxfs.safetensors.s3;
