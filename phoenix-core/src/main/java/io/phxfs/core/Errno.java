package io.phxfs.core;

/**
 * Linux errno values that libphoenix returns (negated), with their symbolic names.
 * The numbers are the x86-64 / aarch64 Linux ones, the only platforms libphoenix targets.
 */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int E2BIG = 7;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int EXDEV = 18;
    public static final int ENODEV = 19;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int ENFILE = 23;
    public static final int EMFILE = 24;
    public static final int ENOTTY = 25;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int ESPIPE = 29;
    public static final int EROFS = 30;
    public static final int EPIPE = 32;
    public static final int ERANGE = 34;
    public static final int ENAMETOOLONG = 36;
    public static final int ENOSYS = 38;
    public static final int ELOOP = 40;
    public static final int ENODATA = 61;
    public static final int EOVERFLOW = 75;
    public static final int EOPNOTSUPP = 95;
    public static final int ETIMEDOUT = 110;
    public static final int EALREADY = 114;
    public static final int EINPROGRESS = 115;
    public static final int EDQUOT = 122;
    public static final int ECANCELED = 125;

    private static final String[] NAMES = new String[126];

    static {
        NAMES[EPERM] = "EPERM";
        NAMES[ENOENT] = "ENOENT";
        NAMES[3] = "ESRCH";
        NAMES[EINTR] = "EINTR";
        NAMES[EIO] = "EIO";
        NAMES[ENXIO] = "ENXIO";
        NAMES[E2BIG] = "E2BIG";
        NAMES[8] = "ENOEXEC";
        NAMES[EBADF] = "EBADF";
        NAMES[10] = "ECHILD";
        NAMES[EAGAIN] = "EAGAIN";
        NAMES[ENOMEM] = "ENOMEM";
        NAMES[EACCES] = "EACCES";
        NAMES[EFAULT] = "EFAULT";
        NAMES[15] = "ENOTBLK";
        NAMES[EBUSY] = "EBUSY";
        NAMES[EEXIST] = "EEXIST";
        NAMES[EXDEV] = "EXDEV";
        NAMES[ENODEV] = "ENODEV";
        NAMES[ENOTDIR] = "ENOTDIR";
        NAMES[EISDIR] = "EISDIR";
        NAMES[EINVAL] = "EINVAL";
        NAMES[ENFILE] = "ENFILE";
        NAMES[EMFILE] = "EMFILE";
        NAMES[ENOTTY] = "ENOTTY";
        NAMES[26] = "ETXTBSY";
        NAMES[EFBIG] = "EFBIG";
        NAMES[ENOSPC] = "ENOSPC";
        NAMES[ESPIPE] = "ESPIPE";
        NAMES[EROFS] = "EROFS";
        NAMES[31] = "EMLINK";
        NAMES[EPIPE] = "EPIPE";
        NAMES[33] = "EDOM";
        NAMES[ERANGE] = "ERANGE";
        NAMES[35] = "EDEADLK";
        NAMES[ENAMETOOLONG] = "ENAMETOOLONG";
        NAMES[37] = "ENOLCK";
        NAMES[ENOSYS] = "ENOSYS";
        NAMES[39] = "ENOTEMPTY";
        NAMES[ELOOP] = "ELOOP";
        NAMES[ENODATA] = "ENODATA";
        NAMES[EOVERFLOW] = "EOVERFLOW";
        NAMES[EOPNOTSUPP] = "EOPNOTSUPP";
        NAMES[ETIMEDOUT] = "ETIMEDOUT";
        NAMES[EALREADY] = "EALREADY";
        NAMES[EINPROGRESS] = "EINPROGRESS";
        NAMES[EDQUOT] = "EDQUOT";
        NAMES[ECANCELED] = "ECANCELED";
    }

    private Errno() {
    }

    /** The symbolic name ("EFAULT"), or "errno N" for a number this table does not know. */
    public static String name(int errno) {
        int e = Math.abs(errno);
        String n = e < NAMES.length ? NAMES[e] : null;
        return n != null ? n : "errno " + e;
    }
}
