package io.phxfs.serving.guided;

/**
 * A JSON Schema that guided decoding cannot enforce: a keyword it does not implement (a
 * {@code pattern}, a {@code minimum}, ...), a combination it cannot express byte by byte, or a
 * malformed schema. Refusing is the only safe answer: ignoring the constraint would let the model
 * produce output that violates the caller's schema.
 */
public final class UnsupportedSchemaException extends IllegalArgumentException {
    /** The exception's serialized form version. */
    private static final long serialVersionUID = 1L;

    /** Where in the schema the problem is, as a JSON pointer ({@code ""} for the root). */
    private final String pointer;
    /** The keyword that cannot be enforced. */
    private final String keyword;

    /**
     * Creates the exception.
     *
     * @param pointer the JSON pointer of the schema object that holds the keyword ({@code ""} for the root)
     * @param keyword the keyword
     * @param why what is wrong with it, completing the sentence "guided decoding cannot enforce ..."
     */
    UnsupportedSchemaException(String pointer, String keyword, String why) {
        super("guided decoding cannot enforce the JSON Schema keyword '" + keyword + "' at "
                + (pointer.isEmpty() ? "the schema's root" : pointer) + ": " + why);
        this.pointer = pointer;
        this.keyword = keyword;
    }

    /**
     * Where the problem is.
     *
     * @return the JSON pointer of the schema object holding the keyword, e.g. {@code /properties/age};
     *         {@code ""} for the root
     */
    public String pointer() {
        return pointer;
    }

    /**
     * The keyword that cannot be enforced.
     *
     * @return the keyword, e.g. {@code pattern}
     */
    public String keyword() {
        return keyword;
    }
}
