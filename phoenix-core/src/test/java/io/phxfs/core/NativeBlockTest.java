package io.phxfs.core;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** calloc'd cells: zeroed, sized, aligned, freed once by whichever thread closes them. */
class NativeBlockTest {
    @Test
    void zeroedSizedAndAlignedForLongs() {
        try (NativeBlock b = NativeBlock.allocate(1000)) {
            MemorySegment s = b.segment();
            assertEquals(1000, s.byteSize());
            assertEquals(0, s.address() % 16, "calloc's alignment");
            for (long i = 0; i < s.byteSize(); i++) {
                assertEquals(0, s.get(JAVA_BYTE, i), "byte " + i);
            }
            s.set(JAVA_LONG, 992, -1L);
            assertEquals(-1L, s.get(JAVA_LONG, 992));
            assertThrows(IndexOutOfBoundsException.class, () -> s.get(JAVA_LONG, 993));
        }
    }

    @Test
    void closedOnAnotherThreadOnceWhateverTheCalls() throws Exception {
        NativeBlock b = NativeBlock.allocate(64);
        b.segment().set(JAVA_LONG, 0, 42L);
        // a double free would abort the process (glibc's check), which no assertion could catch
        CompletableFuture.runAsync(b::close).get();
        b.close();
        CompletableFuture.runAsync(b::close).get();
    }

    @Test
    void refusesWhatCallocCannotGive() {
        assertThrows(IllegalArgumentException.class, () -> NativeBlock.allocate(0));
        assertThrows(IllegalArgumentException.class, () -> NativeBlock.allocate(-8));
        OutOfMemoryError e = assertThrows(OutOfMemoryError.class, () -> NativeBlock.allocate(Long.MAX_VALUE));
        assertEquals("calloc of " + Long.MAX_VALUE + " bytes of native memory failed", e.getMessage());
    }
}
