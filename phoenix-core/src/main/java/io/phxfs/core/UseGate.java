package io.phxfs.core;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts the operations that use a native resource (a buffer, a file) so that closing it
 * while libphoenix still reads or writes through it is refused instead of freeing memory or
 * recycling a file descriptor under an in-flight request.
 */
final class UseGate {
    private static final int CLOSED = -1;

    private final AtomicInteger state = new AtomicInteger();

    /** Takes one use; throws IllegalStateException when already closed. */
    void acquire(Object owner) {
        for (;;) {
            int s = state.get();
            if (s == CLOSED) {
                throw new IllegalStateException(owner + " is closed");
            }
            if (state.compareAndSet(s, s + 1)) {
                return;
            }
        }
    }

    void release() {
        state.decrementAndGet();
    }

    /**
     * Moves to closed when nothing uses the resource.
     *
     * @return false when it was already closed (close is then a no-op)
     * @throws PhoenixException EBUSY while operations are in flight
     */
    boolean beginClose(Object owner) {
        for (;;) {
            int s = state.get();
            if (s == CLOSED) {
                return false;
            }
            if (s > 0) {
                throw new PhoenixException("close " + owner + " while " + s + " operation(s) use it",
                        Errno.EBUSY);
            }
            if (state.compareAndSet(0, CLOSED)) {
                return true;
            }
        }
    }

    /** Undoes {@link #beginClose} when the native release failed and the resource stays usable. */
    void abortClose() {
        state.set(0);
    }

    boolean isClosed() {
        return state.get() == CLOSED;
    }

    void checkOpen(Object owner) {
        if (isClosed()) {
            throw new IllegalStateException(owner + " is closed");
        }
    }
}
