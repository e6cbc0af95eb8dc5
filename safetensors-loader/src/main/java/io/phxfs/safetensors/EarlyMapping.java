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
 * only the files' names and sizes, so a thread of its own maps the files the locate found and
 * faults their pages in while the parse, the plan and the views run. The plan takes the
 * mapping if it maps those files at the sizes their headers were parsed at; otherwise (a file
 * changed, a cold file) the mapping is dropped and the usual path decides. The load returns
 * once every page is in, as a populated mapping's load always has.
 */
final class EarlyMapping {
    private final List<Path> files;
    /** The files mapped (addresses final, pages perhaps not yet in): null when one is cold. */
    private final CompletableFuture<FileMapping> mapping;
    /** Every page faulted in. */
    private final CompletableFuture<Void> populated;

    private EarlyMapping(List<Path> files, CompletableFuture<FileMapping> mapping, CompletableFuture<Void> populated) {
        this.files = files;
        this.mapping = mapping;
        this.populated = populated;
    }

    /**
     * The mapping started, or null when there is nothing to map: the caller's {@code mapAlways}
     * skips the page-cache check ({@link WeightLoader.Builder#mapHost}).
     */
    static EarlyMapping start(List<Path> files, boolean mapAlways) {
        if (files.isEmpty()) {
            return null;
        }
        List<Path> copy = List.copyOf(files);
        CompletableFuture<FileMapping> mapped = new CompletableFuture<>();
        CompletableFuture<Void> populated = new CompletableFuture<>();
        // a platform thread: populating blocks in the kernel, and a virtual thread would hold
        // one of the carriers the headers' parse runs on
        Thread.ofPlatform().daemon().name("phoenix-early-map").start(() -> {
            try {
                FileMapping m = map(copy, mapAlways);
                mapped.complete(m);
                if (m != null) {
                    m.populate();
                }
                populated.complete(null);
            } catch (RuntimeException | Error e) {
                mapped.completeExceptionally(e);
                populated.completeExceptionally(e);
            }
        });
        return new EarlyMapping(copy, mapped, populated);
    }

    /** Every file mapped whole (not yet populated), or null when one is not in the page cache (it is copied then). */
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
            return Phoenix.open().host().map(ranges, false);
        } catch (RuntimeException e) {
            return null; // the usual path meets the same problem and reports it with the plan
        }
    }

    /**
     * The mapping of {@code hostFiles} (the plan's files in host memory), or null when the
     * early mapping does not cover them at the sizes their headers were parsed at (then it is
     * unmapped). Waits for the files to be mapped, not for their pages: {@link #awaitPopulated}
     * does that, once the views are made.
     *
     * @throws PhoenixException when a file's size now differs from what its header implied
     */
    HostMapping finish(List<SafetensorsHeader> hostFiles) {
        FileMapping m = await(mapping);
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
            long mapped = i == null ? -1 : m.ranges().get(i).length();
            if (mapped != h.fileSize()) {
                await(populated); // the pages are being faulted in: let that end, then unmap
                m.close();
                if (i == null) {
                    return null;
                }
                throw new PhoenixException(h.file() + ": size is " + mapped + " bytes, the header parsed earlier implied "
                        + h.fileSize() + " (did the file shrink or grow?)", Errno.EIO);
            }
            index.put(h, i);
        }
        return HostMapping.of(m, index);
    }

    /** Waits until every page of the mapping is in (the mapped load's read). */
    void awaitPopulated() {
        await(populated);
    }

    /** Waits for the mapping thread and unmaps what it mapped (a load that failed, or took another path). */
    void abandon(Throwable cause) {
        try {
            FileMapping m = await(mapping);
            await(populated);
            if (m != null) {
                m.close();
            }
        } catch (RuntimeException | Error e) {
            if (cause != null) {
                cause.addSuppressed(e);
            }
        }
    }

    private static <T> T await(CompletableFuture<T> f) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
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
