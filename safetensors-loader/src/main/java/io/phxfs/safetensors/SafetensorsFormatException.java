package io.phxfs.safetensors;

import java.nio.file.Path;

/**
 * A safetensors file, or a model index, that breaks the format. The message is one line:
 * {@code "<file>: <tensor or field>: <problem>"}, with names from the file quoted and their
 * control characters escaped, so that it can be shown to a user as it is.
 *
 * <p>It is an {@link IllegalArgumentException}: the input is wrong, not the program.
 */
public class SafetensorsFormatException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    /** The tensor or field at fault; null when the problem concerns the whole file. */
    private final String subject;
    /** What is wrong, without the file and subject. */
    private final String problem;

    /**
     * A malformed file.
     *
     * @param file    the file that is malformed
     * @param subject the tensor or field at fault (e.g. {@code "tensor 'wte.weight'"}), or null
     *                when the problem concerns the file as a whole
     * @param problem what is wrong
     */
    public SafetensorsFormatException(Path file, String subject, String problem) {
        this(file, subject, problem, null);
    }

    /**
     * A malformed file, found through another exception (a JSON parse error, an I/O error).
     *
     * @param file    the file that is malformed
     * @param subject the tensor or field at fault, or null for the file as a whole
     * @param problem what is wrong
     * @param cause   the exception that revealed it
     */
    public SafetensorsFormatException(Path file, String subject, String problem, Throwable cause) {
        super(oneLine(file + ": " + (subject == null ? "" : subject + ": ") + problem), cause);
        this.file = file;
        this.subject = subject;
        this.problem = problem;
    }

    /**
     * The malformed file.
     *
     * @return the file's path
     */
    public Path file() {
        return file;
    }

    /**
     * The tensor or field at fault; null when the problem concerns the whole file.
     *
     * @return the tensor or field name, or null
     */
    public String subject() {
        return subject;
    }

    /**
     * What is wrong, without the file and subject.
     *
     * @return the problem's description
     */
    public String problem() {
        return problem;
    }

    /** Messages reach terminals and logs that expect one line per failure. */
    private static String oneLine(String s) {
        return Names.escapeControls(s);
    }
}
