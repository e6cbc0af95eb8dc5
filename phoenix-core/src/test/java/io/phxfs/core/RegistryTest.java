package io.phxfs.core;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.core.Fixtures.dev0;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The device registry as Java sees it: bounds, overlap, duplicate refcounts, EBUSY. */
class RegistryTest {
    private static final long PAGE = 4096;

    @TempDir
    Path dir;

    private Device dev;
    /** Device memory from phxfs_mem_alloc that no registration covers yet. */
    private MemorySegment raw;
    private final List<RegisteredBuffer> opened = new ArrayList<>();

    @BeforeEach
    void allocateRaw() {
        dev = dev0();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            assertEquals(0, MemoryCalls.memAlloc(dev.id(), 8 * PAGE, out));
            raw = out.get(ADDRESS, 0);
        }
    }

    @AfterEach
    void freeRaw() {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        assertEquals(0, MemoryCalls.memFree(dev.id(), raw));
    }

    @SuppressWarnings("restricted")
    private static MemorySegment range(long address, long length) {
        return MemorySegment.ofAddress(address).reinterpret(length);
    }

    private RegisteredBuffer register(long pageOffset, long pages) {
        RegisteredBuffer b = dev.register(range(raw.address() + pageOffset * PAGE, pages * PAGE));
        opened.add(b);
        return b;
    }

    private void assertOverlapRejected(long pageOffset, long pages) {
        PhoenixException e = assertThrows(PhoenixException.class, () -> register(pageOffset, pages),
                "[" + pageOffset + ", +" + pages + ") pages overlaps [2, 4)");
        assertEquals(Errno.EINVAL, e.errno());
        assertTrue(e.getMessage().startsWith("phxfs_regmem(device 0, 0x"), e.getMessage());
    }

    @Test
    void overlappingRegistrationsAreRejected() {
        register(2, 2);
        assertOverlapRejected(3, 2); // straddles the end
        assertOverlapRejected(1, 2); // straddles the start
        assertOverlapRejected(2, 1); // prefix
        assertOverlapRejected(3, 1); // suffix
        assertOverlapRejected(1, 4); // superset
        register(4, 1); // adjacent after
        register(0, 2); // adjacent before
    }

    @Test
    void exactDuplicatesAreReferenceCounted() throws IOException {
        byte[] data = Fixtures.random(64 * 1024, 7);
        Path file = Fixtures.writeFile(dir, "dup.bin", data);
        RegisteredBuffer first = register(0, 4);
        RegisteredBuffer second = register(0, 4);
        RegisteredBuffer third = register(0, 4);
        try (PhxFile f = PhxFile.open(file)) {
            second.close();
            third.close();
            assertEquals(4 * PAGE, f.read(first, 0, 4 * PAGE, 0), "one reference is left");
            Fixtures.assertBytes(data, 0, Fixtures.contents(first, 0, (int) (4 * PAGE)), "read into a shared range");

            first.close();
            assertEquals(-Errno.EINVAL, MemoryCalls.deregmem(dev.id(), first.base(), first.size()),
                    "the last close removed the registration");
        }
    }

    @Test
    void readingOutsideTheRegistrationIsEfault() throws IOException {
        byte[] data = Fixtures.random(64 * 1024, 3);
        Path file = Fixtures.writeFile(dir, "bounds.bin", data);
        RegisteredBuffer b = register(2, 2);
        try (PhxFile f = PhxFile.open(file)) {
            assertEquals(2 * PAGE, f.read(b, 0, 2 * PAGE, 0));
            for (long[] req : new long[][] {{2 * PAGE - 10, 100}, {2 * PAGE, 1}, {5 * PAGE, 16}}) {
                PhoenixException e = assertThrows(PhoenixException.class, () -> f.read(b, req[0], req[1], 0));
                assertEquals(Errno.EFAULT, e.errno(), e.getMessage());
                assertTrue(e.getMessage().startsWith("phxfs_read(" + file), e.getMessage());
                assertTrue(e.getMessage().contains("offset " + req[0]), e.getMessage());
            }

            // Once the last reference goes, the same memory is no longer a legal target.
            assertEquals(0, MemoryCalls.deregmem(dev.id(), b.base(), b.size()));
            PhoenixException e = assertThrows(PhoenixException.class, () -> f.read(b, 0, 16, 0));
            assertEquals(Errno.EFAULT, e.errno());
            assertEquals(-Errno.EINVAL, MemoryCalls.deregmem(dev.id(), b.base(), b.size()),
                    "deregistering an unregistered range");
            try (Arena arena = Arena.ofConfined()) {
                assertEquals(0, MemoryCalls.regmem(dev.id(), b.base(), b.size(), arena.allocate(ADDRESS)));
            }
        }
    }

    @Test
    void deregistrationWhileAnAsyncBatchHoldsTheRangeIsEbusy() throws IOException {
        Path file = Fixtures.writeFile(dir, "busy.bin", Fixtures.random((int) (4 * PAGE), 11));
        RegisteredBuffer b = register(0, 4);
        try (PhxFile f = PhxFile.open(file); Arena arena = Arena.ofConfined()) {
            MemorySegment reqs = arena.allocate(IoBatch.REQ_LAYOUT);
            reqs.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, f.fd());
            reqs.set(java.lang.foreign.ValueLayout.JAVA_INT, 4, dev.id());
            reqs.set(ADDRESS, 8, b.base());
            reqs.set(java.lang.foreign.ValueLayout.JAVA_LONG, 16, 0L);
            reqs.set(java.lang.foreign.ValueLayout.JAVA_LONG, 24, 4 * PAGE);
            reqs.set(java.lang.foreign.ValueLayout.JAVA_LONG, 32, 0L);
            MemorySegment capture = arena.allocate(NativeLibrary.CAPTURE_LAYOUT);
            MemorySegment h = IoCalls.batchSubmitRead(capture, reqs, 1);
            assertTrue(!h.equals(MemorySegment.NULL), "submit: errno " + NativeLibrary.captured(capture));
            // Until wait returns, the handle holds the registration, finished or not.
            assertEquals(-Errno.EBUSY, MemoryCalls.deregmem(dev.id(), b.base(), b.size()));
            assertEquals(0, IoCalls.batchWait(h));
            assertEquals(4 * PAGE, reqs.get(java.lang.foreign.ValueLayout.JAVA_LONG, 40));
            assertEquals(0, IoCalls.batchDestroy(h));
        }
        b.close();
    }

    @Test
    void allocateRegistersTheWholeBuffer() throws IOException {
        Path file = Fixtures.writeFile(dir, "alloc.bin", Fixtures.random(100_000, 5));
        try (RegisteredBuffer b = dev.allocate(65_536); PhxFile f = PhxFile.open(file)) {
            assertEquals(65_536, f.read(b, 0, 65_536, 0));
            assertEquals(Errno.EFAULT, assertThrows(PhoenixException.class, () -> f.read(b, 65_530, 7, 0)).errno());
            assertEquals(Errno.EINVAL, assertThrows(PhoenixException.class,
                    () -> dev.register(range(b.address() + PAGE, PAGE))).errno());
        }
    }
}
