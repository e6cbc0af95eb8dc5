package io.phxfs.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Memory figures of this process from /proc/self/status (Linux), in bytes; -1 where absent. */
final class ProcStatus {
    private ProcStatus() {
    }

    /** Peak resident set size (VmHWM). */
    static long peakRss() {
        return field("VmHWM:");
    }

    /** Current resident set size (VmRSS). */
    static long rss() {
        return field("VmRSS:");
    }

    /** Resident anonymous memory (RssAnon): heap, copies, pools. */
    static long rssAnon() {
        return field("RssAnon:");
    }

    /** Resident file pages mapped (RssFile): page-cache pages this process maps, shared, not extra memory. */
    static long rssFile() {
        return field("RssFile:");
    }

    private static long field(String name) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(name)) {
                    String[] parts = line.substring(name.length()).trim().split("\\s+");
                    long v = Long.parseLong(parts[0]);
                    return parts.length > 1 && parts[1].equalsIgnoreCase("kB") ? v * 1024 : v;
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
