package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class HeapPagesTest {
    private static final String MADVISE = "always [madvise] never\n";
    private static final String ASK = "the ./phoenix launcher asks for them for the Java heap with"
            + " -XX:+UseTransparentHugePages unless PHX_THP=0";

    private static String rollup(String anonHuge) {
        return "55d0a0a00000-7ffc1b1ff000 ---p 00000000 00:00 0                          [rollup]\n"
                + "Rss:              231944 kB\nAnonymous:        190232 kB\n"
                + (anonHuge == null ? "" : "AnonHugePages:  " + anonHuge + "\n") + "ShmemPmdMapped:        0 kB\n";
    }

    @Test
    void hugePagesGivenAreSaidWithTheirAmount() {
        assertEquals("transparent huge pages: 6 MiB of this process (the Java heap's, and the JIT's code beside it;"
                        + " kernel mode madvise)",
                HeapPages.describe(MADVISE, rollup("    6144 kB")));
        assertEquals("transparent huge pages: 2 MiB of this process (the Java heap's, and the JIT's code beside it;"
                        + " kernel mode always)",
                HeapPages.describe("[always] madvise never\n", rollup("2048 kB")));
    }

    @Test
    void noneGivenSaysHowToGetThem() {
        assertEquals("transparent huge pages: none in this process (kernel mode madvise; " + ASK + ")",
                HeapPages.describe(MADVISE, rollup("       0 kB")));
    }

    @Test
    void aKernelWithoutThemIsSaidWhateverTheProcessShows() {
        assertEquals("transparent huge pages: off in this kernel (/sys/kernel/mm/transparent_hugepage/enabled is never)",
                HeapPages.describe("always madvise [never]\n", rollup("0 kB")));
        assertEquals("transparent huge pages: none (/sys/kernel/mm/transparent_hugepage/enabled is missing or unreadable)",
                HeapPages.describe(null, rollup("2048 kB")));
    }

    @Test
    void aModeFileWithoutAModeIsShownAsItReads() {
        assertEquals("transparent huge pages: not known (/sys/kernel/mm/transparent_hugepage/enabled reads"
                        + " 'always madvise never', no [mode] in it)",
                HeapPages.describe("always madvise never\n", rollup("2048 kB")));
        assertEquals("transparent huge pages: not known (/sys/kernel/mm/transparent_hugepage/enabled reads"
                        + " 'a b', no [mode] in it)",
                HeapPages.describe("a\tb\n", rollup("2048 kB")));
        assertEquals("transparent huge pages: not known (/sys/kernel/mm/transparent_hugepage/enabled reads"
                        + " '', no [mode] in it)",
                HeapPages.describe("", rollup("2048 kB")));
    }

    @Test
    void anUnreadableRollupIsNotKnown() {
        for (String r : new String[] {null, rollup(null), rollup("many kB"), rollup("12 MB")}) {
            assertEquals("transparent huge pages: not known (/proc/self/smaps_rollup is unreadable; kernel mode madvise)",
                    HeapPages.describe(MADVISE, r), String.valueOf(r));
        }
    }
}
