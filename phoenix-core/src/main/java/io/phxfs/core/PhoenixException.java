package io.phxfs.core;

/**
 * A failure reported by libphoenix (a negative errno) or a refusal with the same meaning
 * raised on the Java side before the call (for example {@link Errno#EBUSY} when a buffer
 * that an in-flight batch uses is closed).
 *
 * <p>The message reads {@code "<what failed>: <ERRNO NAME> (<libphoenix's message>)"}; the
 * part in parentheses is left out when libphoenix gave none.
 */
public class PhoenixException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The positive errno value. */
    private final int errno;
    /** libphoenix's own message; "" when it gave none. */
    private final String nativeMessage;

    /**
     * An error without a message from libphoenix.
     *
     * @param what  the operation and its arguments, e.g. {@code "phxfs_read(/data/x, ...)"}
     * @param errno a positive errno value
     */
    public PhoenixException(String what, int errno) {
        this(what, errno, "");
    }

    /**
     * An error with libphoenix's own message (phxfs_last_error) for it.
     *
     * @param what          the operation and its arguments, e.g. {@code "phxfs_read(/data/x, ...)"}
     * @param errno         an errno value, either sign (kept positive)
     * @param nativeMessage libphoenix's message; null or empty when it gave none
     */
    public PhoenixException(String what, int errno, String nativeMessage) {
        super(format(what, errno, nativeMessage));
        this.errno = Math.abs(errno);
        this.nativeMessage = nativeMessage == null ? "" : nativeMessage;
    }

    /**
     * Builds the exception for a negative return of a libphoenix call. Must run on the thread
     * that made the call, right after it: phxfs_last_error is per thread.
     */
    static PhoenixException fromNative(String what, long negativeErrno) {
        return new PhoenixException(what, (int) -negativeErrno, NativeLibrary.lastError());
    }

    /**
     * The positive errno value, e.g. {@link Errno#EFAULT}.
     *
     * @return the errno, {@code > 0}
     */
    public int errno() {
        return errno;
    }

    /**
     * The errno's symbolic name, e.g. "EFAULT".
     *
     * @return the symbolic name of {@link #errno()}
     */
    public String errnoName() {
        return Errno.name(errno);
    }

    /**
     * libphoenix's own message for this failure; "" when it gave none.
     *
     * @return the message, or ""
     */
    public String nativeMessage() {
        return nativeMessage;
    }

    private static String format(String what, int errno, String nativeMessage) {
        String base = what + ": " + Errno.name(errno);
        return nativeMessage == null || nativeMessage.isEmpty() ? base : base + " (" + nativeMessage + ")";
    }
}
