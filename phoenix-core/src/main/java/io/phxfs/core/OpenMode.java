package io.phxfs.core;

/** Options for {@link PhxFile#open}. With neither READ nor WRITE the file opens for reading. */
public enum OpenMode {
    /** Open for reading (O_RDONLY, or O_RDWR together with WRITE). */
    READ,
    /** Open for writing (O_WRONLY, or O_RDWR together with READ). */
    WRITE,
    /** Create the file (mode 0644, less the umask) if it does not exist. */
    CREATE,
    /** Truncate an existing file to length 0. */
    TRUNCATE,
    /**
     * Ask for O_DIRECT. libphoenix falls back to buffered I/O when the file system refuses;
     * {@link PhxFile#isDirect()} says which one the file got.
     */
    DIRECT
}
