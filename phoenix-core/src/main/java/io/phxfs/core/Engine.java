package io.phxfs.core;

/** The I/O engine serving a device's workers. */
public enum Engine {
    /** pread/pwrite loops. */
    SYNC(0),
    /** io_uring, one ring per worker. */
    URING(1);

    private final int code;

    Engine(int code) {
        this.code = code;
    }

    /**
     * The phxfs_engine_t value.
     *
     * @return the value libphoenix uses for this engine
     */
    public int code() {
        return code;
    }

    static Engine of(int code) {
        for (Engine e : values()) {
            if (e.code == code) {
                return e;
            }
        }
        throw new IllegalArgumentException("unknown phxfs_engine_t " + code);
    }
}
