package io.phxfs.core;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link HostMemoryPool}: closed buffers' mappings come back, within the byte cap, never alive twice. */
class HostMemoryPoolTest {
    private static final Phoenix PHX = Phoenix.open();

    @Test
    void aClosedBufferComesBackAndItsOldSegmentsAreDead() {
        try (HostMemoryPool pool = PHX.host().pool(64L << 20)) {
            RegisteredBuffer a = pool.allocate(5 << 20);
            MemorySegment old = a.segment().orElseThrow();
            assertEquals(0, old.address() & ((2 << 20) - 1), "2 MiB-aligned");
            old.set(ValueLayout.JAVA_LONG, 0, 0x1234_5678_9abcL);
            long address = a.address();
            a.close();
            a.close();
            assertTrue(pool.keptBytes() >= 5 << 20, pool.toString());
            assertThrows(IllegalStateException.class, () -> old.get(ValueLayout.JAVA_LONG, 0), "closed buffer, dead segment");
            try (RegisteredBuffer b = pool.allocate(4 << 20)) {
                assertEquals(address, b.address(), "the kept mapping is reused");
                assertEquals(1, pool.reuses());
                assertEquals(0, pool.keptBytes(), "in use, not kept");
                // contents are undefined on reuse: here, what the last user wrote
                assertEquals(0x1234_5678_9abcL, b.segment().orElseThrow().get(ValueLayout.JAVA_LONG, 0));
                try (RegisteredBuffer c = pool.allocate(1 << 20)) {
                    assertNotEquals(b.address(), c.address(), "a mapping is never handed out twice");
                    assertEquals(2, pool.newMappings());
                }
            }
        }
    }

    @Test
    void thePoolKeepsNoMoreThanItsCapAndNothingAfterClose() {
        HostMemoryPool pool = PHX.host().pool(5L << 20); // a 1 MiB buffer maps 4 MiB (2 MiB pages, alignment slack)
        RegisteredBuffer big = pool.allocate(8 << 20);
        RegisteredBuffer small = pool.allocate(1 << 20);
        big.close();
        assertEquals(0, pool.keptBytes(), "over the cap: unmapped");
        small.close();
        assertTrue(pool.keptBytes() > 0 && pool.keptBytes() <= 5L << 20, pool.toString());
        RegisteredBuffer open = pool.allocate(1 << 20);
        pool.close();
        pool.close();
        assertEquals(0, pool.keptBytes());
        open.close();
        assertEquals(0, pool.keptBytes(), "a buffer closed after the pool is unmapped");
        assertThrows(IllegalStateException.class, () -> pool.allocate(1));
        assertThrows(IllegalArgumentException.class, () -> PHX.host().pool(-1));
        try (HostMemoryPool p = PHX.host().pool(1 << 30)) {
            assertThrows(IllegalArgumentException.class, () -> p.allocate(0));
        }
    }
}
