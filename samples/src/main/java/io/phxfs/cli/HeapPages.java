package io.phxfs.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How much of this process is in transparent huge pages, for {@code phoenix info}: a host load
 * of many tensors fills fresh Java heap, and on a VM each first touch of a 4 KiB page is a
 * costly fault, so the {@code ./phoenix} launcher asks for huge pages for the heap
 * ({@code -XX:+UseTransparentHugePages}) where the kernel gives them (perf-3 session 21,
 * docs/benchmarks.md). A JVM started otherwise (a user's own {@code java -jar}, an application
 * embedding the loader) shows here whether it has them.
 *
 * <p>What is shown is what the kernel did, the process's anonymous huge pages
 * ({@code AnonHugePages}: the heap, and the JIT's code and the collector's tables beside it; not
 * shared memory, where ZGC keeps its heap), not what was asked for: the JVM's own options would
 * take {@code java.management}, 40 ms more for {@code info} on the 2-core build machine, and a
 * request can still come back in 4 KiB pages.
 */
final class HeapPages {
    static final Path KERNEL_MODE = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
    static final Path ROLLUP = Path.of("/proc/self/smaps_rollup");
    private static final String LABEL = "transparent huge pages: ";
    private static final String ASK = "the ./phoenix launcher asks for them for the Java heap with"
            + " -XX:+UseTransparentHugePages unless PHX_THP=0";

    private HeapPages() {
    }

    /** The line for this process and kernel. */
    static String describe() {
        return describe(read(KERNEL_MODE), read(ROLLUP));
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException | SecurityException | IllegalArgumentException e) {
            return null; // not Linux, or a restricted /proc or /sys: said as such
        }
    }

    /**
     * @param kernelMode the text of {@link #KERNEL_MODE} ({@code always [madvise] never}), or null when unreadable
     * @param rollup     the text of {@link #ROLLUP}, or null when unreadable
     */
    static String describe(String kernelMode, String rollup) {
        if (kernelMode == null) {
            return LABEL + "none (" + KERNEL_MODE + " is missing or unreadable)";
        }
        String mode = selected(kernelMode);
        if (mode == null) {
            return LABEL + "not known (" + KERNEL_MODE + " reads '" + shown(kernelMode) + "', no [mode] in it)";
        }
        if (mode.equals("never")) {
            return LABEL + "off in this kernel (" + KERNEL_MODE + " is never)";
        }
        long hugeKb = anonHugeKb(rollup);
        if (hugeKb < 0) {
            return LABEL + "not known (" + ROLLUP + " is unreadable; kernel mode " + mode + ")";
        }
        if (hugeKb > 0) {
            return LABEL + (hugeKb >> 10) + " MiB of this process (the Java heap's, and the JIT's code beside it;"
                    + " kernel mode " + mode + ")";
        }
        return LABEL + "none in this process (kernel mode " + mode + "; " + ASK + ")";
    }

    /** At most a line's worth of a file's text, with no control characters. */
    private static String shown(String text) {
        String t = text.strip().replaceAll("\\p{Cntrl}", " ");
        return t.length() <= 80 ? t : t.substring(0, 80) + "...";
    }

    /** The bracketed word of the kernel's mode line, or null. */
    private static String selected(String kernelMode) {
        if (kernelMode == null) {
            return null;
        }
        int open = kernelMode.indexOf('[');
        int close = kernelMode.indexOf(']', open + 1);
        return open < 0 || close < 0 ? null : kernelMode.substring(open + 1, close);
    }

    /** The rollup's {@code AnonHugePages} in kB, or -1 when it has none or cannot be read. */
    private static long anonHugeKb(String rollup) {
        if (rollup == null) {
            return -1;
        }
        for (String line : rollup.split("\n")) {
            if (line.startsWith("AnonHugePages:")) {
                String v = line.substring("AnonHugePages:".length()).trim();
                if (v.endsWith(" kB")) {
                    try {
                        return Long.parseLong(v.substring(0, v.length() - 3).trim());
                    } catch (NumberFormatException e) {
                        return -1;
                    }
                }
            }
        }
        return -1;
    }
}
