package io.phxfs.cli.serve;

/** Answers one kind of request; runs on a virtual thread, so it may block. */
@FunctionalInterface
interface Endpoint {
    /**
     * Answers and completes the exchange.
     *
     * @throws ApiException for an error answered in OpenAI's shape (the router sends it)
     * @throws Exception for anything else (the router answers 500)
     */
    void handle(Exchange ex) throws Exception;
}
