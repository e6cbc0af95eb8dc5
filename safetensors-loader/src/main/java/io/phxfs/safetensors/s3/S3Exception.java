package io.phxfs.safetensors.s3;

import java.io.IOException;
import java.util.regex.Pattern;

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

    /** The object's URL, with no credentials in it. */
    private final String url;
    /** The HTTP status, or 0 when no answer came. */
    private final int status;
    /** S3's error code, or null. */
    private final String code;
    /** Whether trying again may succeed. */
    private final boolean retryable;

    /* what a signed request carries that must never be shown: presigned query parameters, the
     * Authorization header's signature, and credentials named as in the AWS files and variables */
    private static final Pattern[] SECRETS = {
        Pattern.compile("(?i)(X-Amz-(?:Signature|Credential|Security-Token)=)[^&\\s\"'<>]*"),
        Pattern.compile("(?i)(Signature=)[^,&\\s\"'<>]+"),
        Pattern.compile("(?i)(Authorization\\s*[:=]\\s*)[^\\r\\n\\]]+"),
        Pattern.compile("(?i)(AWS4-HMAC-SHA256\\s+)[^\\r\\n\\]]+"),
        Pattern.compile("(?i)((?:aws_secret_access_key|aws_session_token|aws\\.secretAccessKey|aws\\.sessionToken|x-amz-security-token)[\"']?\\s*[=:]\\s*)[^\\s\"',;]+"),
    };

    /**
     * {@code text} with signatures, presigned query values, Authorization headers and named
     * secrets replaced by {@code ***}: every S3Exception's message goes through it, whatever a
     * server or a library put there.
     *
     * @param text a message, or null
     * @return the message without secrets
     */
    static String scrub(String text) {
        if (text == null) {
            return null;
        }
        for (Pattern p : SECRETS) {
            text = p.matcher(text).replaceAll("$1***");
        }
        return text;
    }

    S3Exception(String message, String url, int status, String code, boolean retryable, Throwable cause) {
        super(scrub(message), cause);
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
