package io.phxfs.safetensors.s3;

import java.io.IOException;

/**
 * A request to an S3-compatible server that failed: the server's answer (HTTP status, S3's
 * error code and message, its request id) or the transport's failure, always naming the
 * {@code s3://} URL, the request and the endpoint. Never carries credentials or signatures.
 *
 * <p>A plain {@link IOException} rather than a {@code NoSuchFileException} or
 * {@code AccessDeniedException}: those are reworded elsewhere into bare errno names
 * ("ENOENT", "EACCES"), losing the status and code a user needs (NoSuchBucket is not
 * NoSuchKey; SignatureDoesNotMatch is not AccessDenied). A key that is simply not there, which
 * a model directory's lookups expect, is a {@code NoSuchFileException} instead.
 */
public class S3Exception extends IOException {
    private static final long serialVersionUID = 1L;

    private final String url;
    private final int status;
    private final String code;
    private final boolean retryable;

    S3Exception(String message, String url, int status, String code, boolean retryable, Throwable cause) {
        super(message, cause);
        this.url = url;
        this.status = status;
        this.code = code;
        this.retryable = retryable;
    }

    /**
     * The object's or bucket's URL.
     *
     * @return e.g. {@code s3://bucket/model/model.safetensors}
     */
    public String url() {
        return url;
    }

    /**
     * The HTTP status.
     *
     * @return the status, or 0 when no answer came (a connection reset, a timeout)
     */
    public int status() {
        return status;
    }

    /**
     * S3's error code.
     *
     * @return e.g. {@code NoSuchBucket}, {@code AccessDenied}, {@code SlowDown}; null when none was given
     */
    public String code() {
        return code;
    }

    /**
     * Whether another try could succeed (a reset, a short body, a 5xx, 503 SlowDown); after
     * the retries are spent the last such failure is thrown with this still true.
     *
     * @return true for a transient failure
     */
    public boolean retryable() {
        return retryable;
    }
}
