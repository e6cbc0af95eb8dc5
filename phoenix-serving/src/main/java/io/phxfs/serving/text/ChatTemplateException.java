package io.phxfs.serving.text;

/**
 * A chat template failed. For the template's own {@code raise_exception("...")} (a conversation
 * it refuses, such as roles that do not alternate) the message is that text verbatim, as
 * transformers reports it; for anything else it reads {@code chat template: <what failed>}, and
 * for a syntax error it names the template and the line.
 */
public final class ChatTemplateException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message the message
     */
    public ChatTemplateException(String message) {
        super(message);
    }

    /**
     * Creates the exception with its cause.
     *
     * @param message the message
     * @param cause what failed underneath
     */
    public ChatTemplateException(String message, Throwable cause) {
        super(message, cause);
    }
}
