package io.phxfs.core;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/** Shared helpers: the library, buffers of either kind, files written and checked with java.nio. */
final class Fixtures {
    static final Phoenix PHX = Phoenix.open();

    /** Which memory a test moves bytes into. */
    enum Kind {
        HOST, DEVICE
    }

    private Fixtures() {
    }

    static Device dev0() {
        return PHX.device(0);
    }

    /** Connector the surefire execution asked for, or null when the environment left it to libphoenix. */
    static String requestedConnector() {
        String c = System.getenv("PHX_CONNECTOR");
        return c == null || c.isBlank() ? null : c;
    }

    static boolean fakeConnector() {
        return "fake".equals(dev0().connector());
    }

    static RegisteredBuffer allocate(Kind kind, long bytes) {
        return kind == Kind.HOST ? PHX.host().allocate(bytes) : dev0().allocate(bytes);
    }

    static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < n; ) {
            long v = r.nextLong();
            for (int k = 0; k < 8 && i < n; k++, v >>>= 8) {
                b[i++] = (byte) v;
            }
        }
        return b;
    }

    static Path writeFile(Path dir, String name, byte[] data) throws IOException {
        return Files.write(dir.resolve(name), data);
    }

    /** Bytes of {@code buf} as the host sees them, through a copy where Java may not touch device memory. */
    static byte[] contents(RegisteredBuffer buf, long offset, int length) {
        byte[] out = new byte[length];
        if (buf.segment().isPresent()) {
            MemorySegment.copy(buf.segment().get(), java.lang.foreign.ValueLayout.JAVA_BYTE, offset, out, 0, length);
        } else {
            PHX.device(buf.deviceId()).copyToHost(buf, offset, MemorySegment.ofArray(out));
        }
        return out;
    }

    static void fill(RegisteredBuffer buf, long offset, byte[] data) {
        if (buf.segment().isPresent()) {
            MemorySegment.copy(data, 0, buf.segment().get(), java.lang.foreign.ValueLayout.JAVA_BYTE, offset, data.length);
        } else {
            PHX.device(buf.deviceId()).copyToDevice(MemorySegment.ofArray(data), buf, offset);
        }
    }

    static void fillByte(RegisteredBuffer buf, byte value) {
        byte[] b = new byte[(int) buf.size()];
        Arrays.fill(b, value);
        fill(buf, 0, b);
    }

    static void assertBytes(byte[] expected, int expectedOffset, byte[] actual, String what) {
        assertBytes(Arrays.copyOfRange(expected, expectedOffset, expectedOffset + actual.length), actual, what);
    }

    static void assertBytes(byte[] expected, byte[] actual, String what) {
        assertEquals(expected.length, actual.length, what + ": length");
        int at = Arrays.mismatch(expected, actual);
        if (at >= 0) {
            fail(what + ": first difference at byte " + at + " of " + expected.length + " (expected "
                    + (expected[at] & 0xff) + ", got " + (actual[at] & 0xff) + ")");
        }
    }

    static void assertAll(byte value, byte[] actual, String what) {
        for (int i = 0; i < actual.length; i++) {
            if (actual[i] != value) {
                fail(what + ": byte " + i + " is " + (actual[i] & 0xff) + ", expected " + (value & 0xff));
            }
        }
    }
}
