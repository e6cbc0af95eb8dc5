package io.phxfs.core;

/** How a device moves bytes between files and its memory; only speed differs between modes. */
public enum Mode {
    /** File pages DMA straight into GPU memory mapped by the phxfs kernel module. */
    P2P(0),
    /** Through GPU staging slots mapped by the phxfs module, then a device-to-device copy. */
    STAGING(1),
    /** Through pinned host slots and asynchronous host-to-device copies. */
    BOUNCE(2),
    /** No accelerator: file to host memory directly. */
    HOST(3);

    private final int code;

    Mode(int code) {
        this.code = code;
    }

    /**
     * The phxfs_mode_t value.
     *
     * @return the value libphoenix uses for this mode
     */
    public int code() {
        return code;
    }

    static Mode of(int code) {
        for (Mode m : values()) {
            if (m.code == code) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown phxfs_mode_t " + code);
    }
}
