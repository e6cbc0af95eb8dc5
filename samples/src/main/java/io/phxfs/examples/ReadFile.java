package io.phxfs.examples;

import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhxFile;
import io.phxfs.core.RegisteredBuffer;
import java.nio.file.Path;

/** Reads a whole file, of any size, into device 0's memory or, with --host, host memory. */
public final class ReadFile {
    /** All of {@code path} in new memory; the caller closes the buffer to free it. */
    public static RegisteredBuffer read(Path path, boolean host) {
        Phoenix phx = Phoenix.open();                       // loads libphoenix from the jar, once
        try (PhxFile f = PhxFile.open(path, OpenMode.READ)) {
            long size = f.size();
            RegisteredBuffer buf = host
                    ? phx.host().allocate(size)             // host memory: Phoenix.host(), not device(-1)
                    : phx.device(0).allocateUninitialized(size); // the read overwrites all of it
            try {
                // One call for any size: libphoenix splits it over its workers itself.
                long n = f.read(buf, 0, size, 0);
                if (n != size) {
                    throw new IllegalStateException(path + " shrank while it was read");
                }
                return buf;
            } catch (RuntimeException e) {
                buf.close();
                throw e;
            }
        }
    }

    /** {@code ReadFile FILE [--host]} */
    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: ReadFile FILE [--host]");
            System.exit(2);
        }
        boolean host = args.length > 1 && args[1].equals("--host");
        try (RegisteredBuffer buf = read(Path.of(args[0]), host)) {
            System.out.println("read " + buf.size() + " bytes into " + (host ? "host memory" : "device 0"));
        }
    }
}
