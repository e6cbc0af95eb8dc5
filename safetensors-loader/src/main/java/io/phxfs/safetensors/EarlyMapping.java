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
 * once every page is in, as a populated mapping's load always has (before Linux 5.14, which
 * cannot populate a mapping after the fact, pages fault in on first access instead).
 */
final class EarlyMapping {
    private final List<Path> files;
    /** The files mapped (addresses final, pages perhaps not yet in): null when one is cold. */
    private final CompletableFuture<Mapped> mapping;
    /** Every page faulted in. */
    private final CompletableFuture<Void> populated;

    /**
     * The mapping and what each file was when it was mapped (its file key, device and inode, and
     * its modification time): a file replaced or rewritten at the same size before the parse is
     * another file, and the mapping of the old one must not be taken for it.
     */
    private record Mapped(FileMapping mapping, List<Object> keys, List<java.nio.file.attribute.FileTime> times) {
    }

    private EarlyMapping(List<Path> files, CompletableFuture<Mapped> mapping, CompletableFuture<Void> populated) {
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
        CompletableFuture<Mapped> mapped = new CompletableFuture<>();
        CompletableFuture<Void> populated = new CompletableFuture<>();
        // a platform thread: populating blocks in the kernel, and a virtual thread would hold
        // one of the carriers the headers' parse runs on
        Thread.ofPlatform().daemon().name("phoenix-early-map").start(() -> {
            Mapped m = null;
            try {
                m = map(copy, mapAlways);
            } catch (RuntimeException | Error e) {
                m = null; // the usual path meets the same problem and reports it
            } finally {
                mapped.complete(m);
            }
            try {
                if (m != null) {
                    m.mapping().populate();
                }
            } catch (RuntimeException | LinkageError e) {
                // populating is ahead-of-time faulting only: a failure is the access's to meet
            } finally {
                populated.complete(null); // always: the loader waits on it before any unmap
            }
        });
        return new EarlyMapping(copy, mapped, populated);
    }

    /** Every file mapped whole (not yet populated), or null when one is not in the page cache (it is copied then). */
    private static Mapped map(List<Path> files, boolean mapAlways) {
        List<FileMapping.Range> ranges = new ArrayList<>(files.size());
        List<Object> keys = new ArrayList<>(files.size());
        List<java.nio.file.attribute.FileTime> times = new ArrayList<>(files.size());
        for (Path p : files) {
            long size;
            try {
                java.nio.file.attribute.BasicFileAttributes a = Files.readAttributes(p,
                        java.nio.file.attribute.BasicFileAttributes.class);
                size = a.size();
                keys.add(a.fileKey());
                times.add(a.lastModifiedTime());
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
        FileMapping m;
        try {
            m = Phoenix.open().host().map(ranges, false);
        } catch (RuntimeException e) {
            return null; // the usual path meets the same problem and reports it with the plan
        }
        // attributes read before the map: a file swapped in between is caught by the check after the parse
        return new Mapped(m, keys, times);
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
        Mapped mapped = Uninterruptibly.get(mapping);
        if (mapped == null) {
            return null;
        }
        FileMapping m = mapped.mapping();
        Map<Path, Integer> at = new HashMap<>();
        for (int i = 0; i < files.size(); i++) {
            at.put(files.get(i), i);
        }
        Map<SafetensorsHeader, Integer> index = new java.util.IdentityHashMap<>();
        RuntimeException failure = null;
        boolean take = true;
        for (SafetensorsHeader h : hostFiles) {
            Integer i = at.get(h.file());
            // the file mapped is the file parsed (replaced neither before the mapping thread
            // reached it nor since): else the usual path maps what was parsed
            if (i == null || h.fileKey() == null || !h.fileKey().equals(mapped.keys().get(i))
                    || !mapped.times().get(i).equals(h.modified())
                    || !sameFile(h.file(), mapped.keys().get(i), mapped.times().get(i))) {
                take = false;
                break;
            }
            long size = m.ranges().get(i).length();
            if (size != h.fileSize()) {
                failure = new PhoenixException(h.file() + ": size is " + size + " bytes, the header parsed earlier implied "
                        + h.fileSize() + " (did the file shrink or grow?)", Errno.EIO);
                break;
            }
            index.put(h, i);
        }
        Throwable error = null;
        if (take && failure == null) {
            try {
                return HostMapping.of(m, index);
            } catch (RuntimeException e) {
                failure = e;
            } catch (Error e) {
                error = e;
            }
        }
        try {
            Uninterruptibly.get(populated); // pages may still be coming in: unmap after
        } finally {
            m.close();
        }
        if (error instanceof Error e) {
            throw e;
        }
        if (failure != null) {
            throw failure;
        }
        return null;
    }

    /** The file at {@code p} is still the one mapped: same file key (device, inode) and modification time. */
    private static boolean sameFile(Path p, Object key, java.nio.file.attribute.FileTime time) {
        try {
            java.nio.file.attribute.BasicFileAttributes a = Files.readAttributes(p, java.nio.file.attribute.BasicFileAttributes.class);
            return java.util.Objects.equals(a.fileKey(), key) && a.lastModifiedTime().equals(time);
        } catch (IOException e) {
            return false;
        }
    }

    /** Waits until every page of the mapping is in (the mapped load's read). */
    void awaitPopulated() {
        Uninterruptibly.get(populated);
    }

    /** Waits for the mapping thread and unmaps what it mapped (a load that failed, or took another path). */
    void abandon(Throwable cause) {
        Mapped m = Uninterruptibly.get(mapping);
        if (m == null) {
            return;
        }
        try {
            Uninterruptibly.get(populated);
        } finally {
            try {
                m.mapping().close();
            } catch (RuntimeException e) {
                if (cause != null && cause != e) {
                    cause.addSuppressed(e);
                }
            }
        }
    }
}
