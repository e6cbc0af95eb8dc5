package io.phxfs.serving.engine;

/** A submitted request. */
public interface GenerationHandle {
    /**
     * The request's id.
     *
     * @return the id given in the request
     */
    String id();

    /**
     * Stops the request's work at the next step (a client that disconnected); its listener
     * then gets {@link GenerationListener#onFinish} with {@link FinishReason#CANCELLED}. Calling
     * it again, or after the end, does nothing.
     */
    void cancel();
}
