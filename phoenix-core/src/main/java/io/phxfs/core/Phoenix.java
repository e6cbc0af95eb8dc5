package io.phxfs.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Entry point: loads libphoenix, hands out devices and the host pseudo-device.
 *
 * <pre>{@code
 * Phoenix phx = Phoenix.open();
 * Device gpu = phx.device(0);
 * try (RegisteredBuffer buf = gpu.allocate(1 << 20);
 *      PhxFile f = PhxFile.open(path, OpenMode.READ, OpenMode.DIRECT)) {
 *     long n = f.read(buf, 0, buf.size(), 0);
 * }
 * }</pre>
 *
 * <p>Configuration (the PHX_* environment variables, e.g. {@code "engine"}, {@code "mode"},
 * {@code "workers"}) is read once and frozen when the library initialises, which
 * {@link #open()} does: afterwards {@link #setConfig} changes only {@code "mode"} (for devices
 * opened later) and {@code "max_io_bytes"}; every other key fails with EBUSY, so set it in the
 * environment.
 *
 * <p>Devices stay open until {@link #close()}, which closes every device this instance
 * opened; {@link #open()} then starts a fresh instance.
 */
public final class Phoenix implements AutoCloseable {
    /** Major version of the C API these bindings were written against (PHXFS_VERSION_MAJOR). */
    public static final int API_VERSION_MAJOR = 0;
    /** Minor version of the C API these bindings were written against (PHXFS_VERSION_MINOR). */
    public static final int API_VERSION_MINOR = 2;
    /** Patch version of the C API these bindings were written against (PHXFS_VERSION_PATCH). */
    public static final int API_VERSION_PATCH = 0;

    private static final Object LOCK = new Object();
    private static volatile Phoenix instance;

    private final ConcurrentHashMap<Integer, Device> devices = new ConcurrentHashMap<>();
    private final Host host = new Host();
    /** Set under this instance's lock once every device is closed; device()'s fast path reads it without. */
    private volatile boolean closed;

    private Phoenix() {
    }

    /**
     * Loads and initialises libphoenix once per process; later calls return the same instance.
     *
     * @throws UnsatisfiedLinkError when libphoenix cannot be found or loaded
     * @throws PhoenixException     when phxfs_init fails
     * @return the process-wide instance
     */
    public static Phoenix open() {
        Phoenix p = instance;
        if (p != null) {
            return p;
        }
        synchronized (LOCK) {
            if (instance == null) {
                NativeLibrary.ensureLoaded();
                int rc = DeviceCalls.init();
                if (rc < 0) {
                    throw PhoenixException.fromNative("phxfs_init", rc);
                }
                instance = new Phoenix();
            }
            return instance;
        }
    }

    /**
     * Links the device-memory entry points (allocate, register, deregister, free, copy) now
     * instead of on their first use. A downcall's first invocation in a fresh JVM spins its
     * method-handle forms, about 0.3 ms per entry point, and the first read of a returned
     * pointer (an ADDRESS access) about 1.2 ms more, which otherwise land inside the first
     * timed transfer; {@link Device}s are opened with this done, and the CLI also calls it
     * from a background thread while the device opens. Each call is made on device -1, which
     * libphoenix rejects at once (ENODEV), so nothing is allocated or changed.
     */
    public void prelinkDeviceCalls() {
        MemoryCalls.prelink();
    }

    /**
     * Number of devices the selected connector sees; at least 1 (a CPU-only machine has a host device).
     *
     * @return the number of devices, {@code >= 1}
     */
    public int deviceCount() {
        int n = DeviceCalls.deviceCount();
        if (n < 0) {
            throw PhoenixException.fromNative("phxfs_device_count", n);
        }
        return n;
    }

    /**
     * The device with this id, opened on first use and cached. Ids run from 0 to
     * {@link #deviceCount()} - 1; host memory is not a device here but {@link #host()}.
     *
     * @param id the device id, {@code >= 0}
     * @throws IllegalArgumentException when {@code id < 0}: the message points to {@link #host()}
     * @throws PhoenixException         ENODEV when no device has this id
     * @throws IllegalStateException    after {@link #close()}
     * @return the open device
     */
    public Device device(int id) {
        if (id < 0) {
            // libphoenix reads a negative id as "host memory" inside requests, but host memory
            // has nothing to open: a Device for it would only be a second, partial Host.
            throw new IllegalArgumentException("device " + id + ": ids are 0.." + (deviceCount() - 1)
                    + "; for host memory use Phoenix.host()");
        }
        Device d = devices.get(id);
        if (d != null && !closed) {
            return d;
        }
        // Opening takes the lock that close holds, so that no device is opened behind its back.
        synchronized (this) {
            checkOpen();
            return devices.computeIfAbsent(id, Device::open);
        }
    }

    /**
     * Closes every device this instance opened (phxfs_close once for each phxfs_open); a
     * device's pinned pool is released when its last open is closed. A second call does
     * nothing. Afterwards {@link #device} throws IllegalStateException and {@link #open()}
     * returns a fresh instance; buffers, streams and batches should be closed first, since
     * they no longer work on a closed device.
     *
     * @throws PhoenixException when a device refuses to close (EBUSY: batches in flight). The
     *                          devices that closed stay closed; the others stay open and this
     *                          instance stays usable, so that close can be retried.
     */
    @Override
    public void close() {
        synchronized (LOCK) {
            synchronized (this) {
                if (closed) {
                    return;
                }
                PhoenixException failure = null;
                for (var it = devices.values().iterator(); it.hasNext(); ) {
                    Device d = it.next();
                    try {
                        d.close();
                        it.remove();
                    } catch (PhoenixException e) {
                        if (failure == null) {
                            failure = e;
                        } else {
                            failure.addSuppressed(e);
                        }
                    }
                }
                if (failure != null) {
                    throw failure;
                }
                closed = true;
                if (instance == this) {
                    instance = null;
                }
            }
        }
    }

    /**
     * Whether {@link #close()} has been called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("Phoenix is closed; Phoenix.open() returns a fresh instance");
        }
    }

    /**
     * Plain host memory (device id -1 in libphoenix's requests): the target for reading files
     * into the Java process's own memory, with no accelerator involved and no registration.
     * {@code device(-1)} does not return it; it throws.
     *
     * @return the host, the same object on every call
     */
    public Host host() {
        return host;
    }

    /**
     * libphoenix's registration granularity (bytes).
     *
     * @return the granularity in bytes
     */
    public long pageSize() {
        return DeviceCalls.getPageSize();
    }

    /**
     * Sets a configuration key: the PHX_* environment names without the prefix, lower case.
     * When a change takes effect depends on the key (phoenix.h):
     * <ul>
     * <li>"engine", "workers", "slot_mb", "slot_kb", "slots", "pinned_mb", "chunk_mb",
     *     "queue_depth", "inline_kb", "connector", "fake_devices", "fresh_fill", "huge_fill" size or shape the
     *     worker pool, which
     *     libphoenix starts in phxfs_init, that is in {@link #open()}: through this method they
     *     always fail with EBUSY. Set them with the PHX_* environment variables instead.</li>
     * <li>"mode" applies to devices opened afterwards; one already open keeps its mode.</li>
     * <li>"max_io_bytes" (the per-syscall cap, a test hook) applies at once.</li>
     * </ul>
     *
     * @throws PhoenixException EBUSY for a pool key, EINVAL for an unknown key or a bad value
     * @param key the key, e.g. "workers"
     * @param value the key's new value, as text
     */
    public void setConfig(String key, String value) {
        try (Arena arena = Arena.ofConfined()) {
            int rc = DeviceCalls.setConfig(arena.allocateFrom(key), arena.allocateFrom(value));
            if (rc < 0) {
                throw PhoenixException.fromNative("phxfs_set_config(" + key + "=" + value + ")", rc);
            }
        }
    }

    /**
     * The effective value of a configuration key.
     *
     * @param key the key, e.g. "workers"
     * @return the value libphoenix uses, as text
     */
    public String getConfig(String key) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocateFrom(key);
            long len = 256;
            for (;;) {
                MemorySegment buf = arena.allocate(len);
                int rc = DeviceCalls.getConfig(k, buf, len);
                if (rc < 0) {
                    throw PhoenixException.fromNative("phxfs_get_config(" + key + ")", rc);
                }
                if (rc < len) {
                    return buf.getString(0);
                }
                // The value did not fit (rc is its full length): ask again with room for the NUL.
                len = rc + 1L;
            }
        }
    }

    /**
     * The version of the libphoenix actually loaded, "major.minor.patch" (phxfs_version).
     *
     * @return the loaded library's version, e.g. {@code "0.2.0"}
     */
    public String version() {
        return libraryVersion();
    }

    /**
     * The version of libphoenix, loading the library if needed but without initialising it
     * (no devices are probed), as {@code phoenix --version} reports it.
     *
     * @return "major.minor.patch" of the loaded library, e.g. {@code "0.2.0"}
     * @throws UnsatisfiedLinkError when libphoenix cannot be found or loaded
     */
    public static String libraryVersion() {
        NativeLibrary.ensureLoaded();
        int v = DeviceCalls.version();
        return v / 10000 + "." + v / 100 % 100 + "." + v % 100;
    }

    /**
     * The version of these bindings: the Maven version of the phoenix-core artifact, e.g.
     * {@code "0.2.0-SNAPSHOT"}. Its release part (before any {@code -} qualifier) equals
     * {@link #libraryVersion()} for the libphoenix packaged with it.
     *
     * @return the artifact version recorded at build time
     */
    public static String bindingsVersion() {
        return BindingsVersion.VALUE;
    }

    /** Read once, on first use: a resource filtered by Maven with the project's version. */
    private static final class BindingsVersion {
        static final String VALUE = read();

        private static String read() {
            try (var in = Phoenix.class.getResourceAsStream("phoenix-version.properties")) {
                if (in == null) {
                    throw new IllegalStateException("phoenix-version.properties missing from the phoenix-core jar");
                }
                var p = new java.util.Properties();
                p.load(in);
                return p.getProperty("version");
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    /**
     * Where the loaded libphoenix came from: the file named by phx.library.path /
     * PHX_LIBRARY_PATH, or else the URL of the jar resource (a {@code jar:} URL) whose
     * extracted copy was unlinked as soon as it was loaded.
     *
     * @return the library's file path or resource URL
     */
    public String libraryPath() {
        return NativeLibrary.LOADED_FROM;
    }

    @Override
    public String toString() {
        return "Phoenix[" + version() + ", " + libraryPath() + "]";
    }
}
