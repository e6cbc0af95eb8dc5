package io.phxfs.core;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * A file operation the OS refused, worded as {@link PhoenixException} words libphoenix's
 * failures: {@code "<operation> <path>: <ERRNO NAME> (<strerror text>)"}, e.g.
 * {@code "open /m/model.safetensors: EACCES (Permission denied)"}, sometimes followed by
 * {@code "; "} and what the path alone does not show (which directory could not be entered).
 *
 * <p>java.nio's own exceptions say too little for a user: an {@code AccessDeniedException}'s
 * message is the bare path, and a failed read's is strerror's text without a path. This
 * exception keeps the original as its cause and is still an {@link IOException}
 * ({@link FileSystemException}), so callers that catch those keep working.
 */
public class FileOperationException extends FileSystemException {
    private static final long serialVersionUID = 1L;

    /** What was attempted ("open", "read", ...); null when unknown. */
    private final String operation;
    private final transient Path path;
    /** The positive errno value. */
    private final int errno;
    /** What the path and errno leave unsaid, or null. */
    private final String detail;

    /**
     * A failure of {@code operation} on {@code path} with {@code errno}.
     *
     * @param operation what was attempted, e.g. "open", "read"; null when unknown
     * @param path      the path it was attempted on
     * @param errno     a positive errno value
     * @param detail    what the path and errno leave unsaid, or null
     * @param cause     the exception this one describes, or null
     */
    public FileOperationException(String operation, Path path, int errno, String detail, Throwable cause) {
        super(path.toString(), null, Errno.name(errno));
        this.operation = operation;
        this.path = path;
        this.errno = Math.abs(errno);
        this.detail = detail;
        if (cause != null) {
            initCause(cause);
        }
    }

    /**
     * Describes {@code e}, an exception from an operation on {@code path}, in this class's words
     * when its errno can be told ({@link Errno#of}); otherwise returns {@code e} itself. An
     * EACCES caused by a directory above {@code path} that cannot be entered names that
     * directory: the OS's error does not say which component refused.
     *
     * @param operation what was attempted, e.g. "open"
     * @param path the path it was attempted on
     * @param e the exception the operation threw
     * @return a FileOperationException describing {@code e}, or {@code e} itself
     */
    public static IOException of(String operation, Path path, IOException e) {
        if (e instanceof FileOperationException) {
            return e;
        }
        OptionalInt errno = Errno.of(e);
        if (errno.isEmpty()) {
            return e;
        }
        // the JDK names the path it was handed, which can be the other end of a link or a
        // file below path; when it says which, that is the more precise one
        Path shown = path;
        if (e instanceof FileSystemException f && f.getFile() != null && f.getOtherFile() == null) {
            shown = Path.of(f.getFile());
        }
        int n = errno.getAsInt();
        if (n == Errno.ENOENT && underAFile(shown)) {
            // the JDK's stat reports ENOTDIR as NoSuchFileException ("x.safetensors/y" when
            // x.safetensors is a file); open(2) would say ENOTDIR, and so do we
            n = Errno.ENOTDIR;
        }
        String detail = n == Errno.EACCES ? unsearchableDirectory(shown) : null;
        if (n == Errno.ENOENT && e instanceof java.nio.file.NoSuchFileException f && f.getReason() != null) {
            // the JDK's own carries no reason: this is one a caller gave (why the path was needed),
            // without the path again when it starts with it
            String why = f.getReason();
            String prefix = (f.getFile() != null ? f.getFile() : String.valueOf(shown)) + ": ";
            detail = why.startsWith(prefix) ? why.substring(prefix.length()) : why;
        }
        return new FileOperationException(operation, shown, n, detail, e);
    }

    /** True when a proper ancestor of {@code path} exists and is not a directory. */
    private static boolean underAFile(Path path) {
        for (Path at = path.toAbsolutePath().normalize().getParent(); at != null; at = at.getParent()) {
            if (Files.exists(at)) {
                return !Files.isDirectory(at);
            }
        }
        return false;
    }

    /** "no permission to enter directory D" for the topmost ancestor D the caller may not search. */
    private static String unsearchableDirectory(Path path) {
        Path abs = path.toAbsolutePath().normalize();
        Path parent = abs.getParent();
        if (parent == null) {
            return null;
        }
        Path at = abs.getRoot();
        for (Path name : parent) {
            at = at.resolve(name);
            // access(2) with X_OK: for root it always succeeds, and root is never refused a search
            if (Files.isDirectory(at) && !Files.isExecutable(at)) {
                return "no permission to enter directory " + at;
            }
        }
        return null;
    }

    /**
     * What was attempted ("open", "read", ...); null when unknown.
     *
     * @return the operation's name, or null
     */
    public String operation() {
        return operation;
    }

    /**
     * The path the operation failed on.
     *
     * @return the path
     */
    public Path path() {
        return path;
    }

    /**
     * The positive errno value, e.g. {@link Errno#EACCES}.
     *
     * @return the errno, {@code > 0}
     */
    public int errno() {
        return errno;
    }

    /**
     * The errno's symbolic name, e.g. "EACCES".
     *
     * @return the symbolic name of {@link #errno()}
     */
    public String errnoName() {
        return Errno.name(errno);
    }

    @Override
    public String getMessage() {
        String text = Errno.text(errno);
        return (operation == null ? "" : operation + " ") + path + ": " + Errno.name(errno)
                + (text.isEmpty() ? "" : " (" + text + ")") + (detail == null ? "" : "; " + detail);
    }
}
