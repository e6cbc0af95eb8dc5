package io.phxfs.serving.engine;

/** The waiting queue is full: the caller should answer 429 and let the client retry. */
public final class QueueFullException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * The queue's state in words.
     *
     * @param message what is full
     */
    public QueueFullException(String message) {
        super(message);
    }
}
