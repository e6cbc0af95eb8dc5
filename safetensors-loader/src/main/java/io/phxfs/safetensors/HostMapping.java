package io.phxfs.safetensors;

import io.phxfs.core.Errno;
import io.phxfs.core.FileOperationException;
import io.phxfs.core.FileMapping;
import io.phxfs.core.Phoenix;
import io.phxfs.core.PhoenixException;
import io.phxfs.core.RegisteredBuffer;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Host "loading" of page-cache-warm files without a copy: every file is mapped whole,
 * read-only and populated, side by side into one address range ({@link io.phxfs.core.Host#map}),
 * so tensors are views of the page cache. Copying into fresh memory must fault in and zero
 * every page first, which costs more than the copy (on the 2-core build VM: 0.3 s per GB
 * against 13 ms to map it); mapping costs only the page-table entries. Clean file pages can
 * be reclaimed under memory pressure and are then read again on access, as with any mmap'd
 * model.
 */
final class HostMapping implements AutoCloseable {
    private final FileMapping mapping;
    private final RegisteredBuffer buffer;
    private final Map<SafetensorsHeader, Integer> index;

    private HostMapping(FileMapping mapping, RegisteredBuffer buffer, Map<SafetensorsHeader, Integer> index) {
        this.mapping = mapping;
        this.buffer = buffer;
        this.index = index;
    }

    /** Maps {@code files} side by side, each as large as its header said when it was parsed. */
    static HostMapping map(Phoenix phx, List<SafetensorsHeader> files) {
        List<FileMapping.Range> ranges = new ArrayList<>(files.size());
        Map<SafetensorsHeader, Integer> index = new IdentityHashMap<>();
        for (SafetensorsHeader h : files) {
            checkUnchanged(h);
            index.put(h, ranges.size());
            ranges.add(new FileMapping.Range(h.file(), 0, h.fileSize()));
        }
        // Host.map checks each range against the open file too, so a file that shrinks after
        // this check fails the map instead of faulting on access.
        FileMapping mapping = phx.host().map(ranges, true);
        try {
            return new HostMapping(mapping, phx.host().wrap(mapping.segment()), index);
        } catch (RuntimeException | Error e) {
            mapping.close();
            throw e;
        }
    }

    /**
     * A mapping made before the headers were parsed ({@link EarlyMapping}): {@code index} gives
     * each file's range in it, the sizes already checked against the headers. The caller keeps
     * {@code mapping} if the buffer cannot be made (its pages may still be coming in).
     */
    static HostMapping of(FileMapping mapping, Map<SafetensorsHeader, Integer> index) {
        return new HostMapping(mapping, Phoenix.open().host().wrap(mapping.segment()), index);
    }

    /** The tensors' offsets come from the parsed header: a file of another size is another file. */
    private static void checkUnchanged(SafetensorsHeader h) {
        long size;
        try {
            size = Files.size(h.file());
        } catch (IOException e) {
            // the same words as the mapping's own failures: "stat PATH: EACCES (Permission denied)"
            int errno = FileOperationException.of("stat", h.file(), e) instanceof FileOperationException f
                    ? f.errno() : Errno.EIO;
            throw new PhoenixException("stat " + h.file(), errno, Errno.text(errno));
        }
        if (size != h.fileSize()) {
            throw new PhoenixException(h.file() + ": size is " + size + " bytes, the header parsed earlier implied "
                    + h.fileSize() + " (did the file shrink or grow?)", Errno.EIO);
        }
    }

    /** The mapped files as one read-only host buffer (closing it frees nothing: {@link #close()} does). */
    RegisteredBuffer buffer() {
        return buffer;
    }

    /** Where a tensor's first byte is in {@link #buffer()}. */
    long offsetOf(SafetensorsHeader file, TensorInfo t) {
        return dataOffsetOf(file) + t.begin();
    }

    /** Where {@code file}'s data section starts in the buffer. */
    long dataOffsetOf(SafetensorsHeader file) {
        return mapping.offsetOf(index.get(file)) + file.dataStart();
    }

    /** Closes the buffer, then unmaps the files; a second close does nothing. */
    @Override
    public void close() {
        buffer.close(); // refuses (EBUSY) while I/O still uses it, leaving the mapping in place
        mapping.close();
    }
}
