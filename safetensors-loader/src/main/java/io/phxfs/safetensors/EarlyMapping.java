package io.phxfs.safetensors;

import io.phxfs.core.FileMapping;
import io.phxfs.core.OpenMode;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.PhxFile;
import io.phxfs.core.Errno;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The host mapping of a load into host memory, made while its headers are parsed: the mapped
 * load's counterpart of {@link EarlyReads}. Populating the page tables of a model's files is
 * kernel work proportional to its bytes (0.1 s for 0.9 GB on the build machine) that needs
 * only the files' names and sizes, so a thread of its own maps the files the locate found
 * while the parse and the plan run. The plan then takes the mapping if it maps exactly those
 * files at the sizes their headers were parsed at; otherwise (a file changed, a cold file) the
 * mapping is dropped and the usual path decides.
 */
final class EarlyMapping {
    private final List<Path> files;
    private final CompletableFuture<FileMapping> mapping;

    private EarlyMapping(List<Path> files, CompletableFuture<FileMapping> mapping) {
        this.files = files;
        this.mapping = mapping;
    }

    /**
     * The mapping started, or null when this load would not map its files: the caller's
     * {@code mapAlways} skips the page-cache check ({@link WeightLoader.Builder#mapHost}).
     */
    static EarlyMapping start(List<Path> files, boolean mapAlways) {
        if (files.isEmpty()) {
            return null;
        }
        List<Path> copy = List.copyOf(files);
        CompletableFuture<FileMapping> f = new CompletableFuture<>();
        // a platform thread: the populating mmap blocks in the kernel, and a virtual thread
        // would hold one of the carriers the headers' parse runs on
        Thread.ofPlatform().daemon().name("phoenix-early-map").start(() -> {
            try {
                f.complete(map(copy, mapAlways));
            } catch (RuntimeException | Error e) {
                f.completeExceptionally(e);
            }
        });
        return new EarlyMapping(copy, f);
    }

    /** Every file mapped whole and populated, or null when one is not in the page cache (it is copied then). */
    private static FileMapping map(List<Path> files, boolean mapAlways) {
        List<FileMapping.Range> ranges = new ArrayList<>(files.size());
        for (Path p : files) {
            long size;
            try {
                size = Files.size(p);
            } catch (IOException e) {
                return null; // the parse reports it
            }
            if (!mapAlways) {
                try (PhxFile f = PhxFile.open(p, OpenMode.READ)) {
                    if (f.cachedFraction() < 0.5) {
                        return null;
                    }
                } catch (RuntimeException e) {
                    return null;
                }
            }
            ranges.add(new FileMapping.Range(p, 0, size));
        }
        try {
            return Phoenix.open().host().map(ranges, true);
        } catch (RuntimeException e) {
            return null; // the usual path meets the same problem and reports it with the plan
        }
    }

    /**
     * The mapping of {@code hostFiles} (the plan's files in host memory), or null when the
     * early mapping does not cover them at the sizes their headers were parsed at (then it is
     * closed). Waits for the mapping to be made.
     *
     * @throws PhoenixException when a file's size now differs from what its header implied
     */
    HostMapping finish(List<SafetensorsHeader> hostFiles) {
        FileMapping m = await();
        if (m == null) {
            return null;
        }
        Map<Path, Integer> at = new HashMap<>();
        for (int i = 0; i < files.size(); i++) {
            at.put(files.get(i), i);
        }
        Map<SafetensorsHeader, Integer> index = new java.util.IdentityHashMap<>();
        for (SafetensorsHeader h : hostFiles) {
            Integer i = at.get(h.file());
            if (i == null) {
                m.close();
                return null;
            }
            long mapped = m.ranges().get(i).length();
            if (mapped != h.fileSize()) {
                m.close();
                throw new PhoenixException(h.file() + ": size is " + mapped + " bytes, the header parsed earlier implied "
                        + h.fileSize() + " (did the file shrink or grow?)", Errno.EIO);
            }
            index.put(h, i);
        }
        return HostMapping.of(m, index);
    }

    /** Waits for the mapping and unmaps it (a load that failed, or took another path). */
    void abandon(Throwable cause) {
        try {
            FileMapping m = await();
            if (m != null) {
                m.close();
            }
        } catch (RuntimeException | Error e) {
            if (cause != null) {
                cause.addSuppressed(e);
            }
        }
    }

    private FileMapping await() {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return mapping.get();
                } catch (InterruptedException e) {
                    interrupted = true; // the mapping thread ends soon; its mapping must not leak
                } catch (java.util.concurrent.ExecutionException e) {
                    if (e.getCause() instanceof RuntimeException r) {
                        throw r;
                    }
                    if (e.getCause() instanceof Error r) {
                        throw r;
                    }
                    throw new IllegalStateException(e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
