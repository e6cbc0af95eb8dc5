package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class HeapPagesTest {
    private static final String MADVISE = "always [madvise] never\n";

    private static String rollup(String anonHuge) {
        return "55d0a0a00000-7ffc1b1ff000 ---p 00000000 00:00 0                          [rollup]\n"
                + "Rss:              231944 kB\nAnonymous:        190232 kB\n"
                + (anonHuge == null ? "" : "AnonHugePages:  " + anonHuge + "\n") + "ShmemPmdMapped:        0 kB\n";
    }

    @Test
    void hugePagesGivenAreSaidWithTheirAmount() {
        assertEquals("java heap: transparent huge pages (6 MiB of this process in them, kernel mode madvise)",
                HeapPages.describe(MADVISE, rollup("    6144 kB")));
        assertEquals("java heap: transparent huge pages (2 MiB of this process in them, kernel mode always)",
                HeapPages.describe("[always] madvise never\n", rollup("2048 kB")));
    }

    @Test
    void noneGivenSaysHowToGetThem() {
        assertEquals("java heap: 4 KiB pages (none of this process in transparent huge pages, kernel mode madvise;"
                        + " the ./phoenix launcher asks for them with -XX:+UseTransparentHugePages unless PHX_THP=0)",
                HeapPages.describe(MADVISE, rollup("       0 kB")));
    }

    @Test
    void aKernelWithoutThemIsSaidWhateverTheProcessShows() {
        assertEquals("java heap: 4 KiB pages (transparent huge pages are off in this kernel:"
                        + " /sys/kernel/mm/transparent_hugepage/enabled is never)",
                HeapPages.describe("always madvise [never]\n", rollup("0 kB")));
        for (String mode : new String[] {null, "", "garbled", "always madvise never"}) {
            assertEquals("java heap: 4 KiB pages (no transparent huge pages:"
                            + " /sys/kernel/mm/transparent_hugepage/enabled is missing or unreadable)",
                    HeapPages.describe(mode, rollup("2048 kB")), String.valueOf(mode));
        }
    }

    @Test
    void anUnreadableRollupIsNotKnown() {
        for (String r : new String[] {null, rollup(null), rollup("many kB"), rollup("12 MB")}) {
            assertEquals("java heap: not known (/proc/self/smaps_rollup is unreadable; kernel mode madvise)",
                    HeapPages.describe(MADVISE, r), String.valueOf(r));
        }
    }
}
