package io.phxfs.kvcache;

import io.phxfs.kvcache.DiskIndex.Entry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Fills a disk tier's index from the chunk files' headers when the tier opens. Payloads are not
 * read (their checksums are checked on read), so opening costs one header per file.
 */
final class IndexRebuild {
    private IndexRebuild() {
    }

    /**
     * Reads every header into {@code index}; deletes temporary leftovers and bad files (unless
     * the index is read-only). Runs before the tier is shared, so nothing else touches the index.
     *
     * @return the temporaries found
     */
    static int rebuild(DiskIndex index) {
        Path dir = index.dir;
        int temps = 0;
        int unreadable = 0;
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                files.add(p);
            }
        } catch (IOException e) {
            // a read-only index is `kv stats DIR`'s, where the user named a directory, not the setting
            throw new UncheckedIOException((index.readOnly ? "" : "local_disk ") + dir + ": cannot list: "
                    + (e instanceof java.nio.file.AccessDeniedException ? "permission denied" : e.getMessage()), e);
        }
        // oldest first, so that the rebuilt LRU order follows the files' ages; each age read once:
        // another process storing there changes them under the sort, whose comparator must not
        // see a file's age move ("Comparison method violates its general contract")
        java.util.Map<Path, Long> ages = new java.util.HashMap<>(files.size() * 2);
        for (Path p : files) {
            ages.put(p, mtime(p));
        }
        files.sort(Comparator.comparingLong(ages::get));
        ByteBuffer hdr = ByteBuffer.allocate(ChunkFileHeader.SIZE);
        for (Path p : files) {
            String name = p.getFileName().toString();
            if (name.contains(DiskIndex.TMP)) {
                temps++;
                if (!index.readOnly) {
                    DiskIndex.deleteQuietly(p);
                }
                continue;
            }
            if (!name.endsWith(DiskIndex.SUFFIX)) {
                continue; // not ours: left alone
            }
            DiskIndex.Found found = DiskIndex.lstat(p);
            if (found != DiskIndex.Found.FILE) {
                // a directory, FIFO, symlink or device under a chunk's name: never opened (a FIFO
                // blocked the open for good, a symlink was followed out of the directory and its
                // target indexed), counted as foreign; what it is removed, unless a directory
                if (found != DiskIndex.Found.GONE) {
                    index.counters.corrupt.increment();
                    if (!index.readOnly && found == DiskIndex.Found.OTHER) {
                        DiskIndex.deleteQuietly(p);
                    }
                }
                continue;
            }
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                long size = ch.size();
                hdr.clear();
                while (hdr.hasRemaining() && ch.read(hdr, hdr.position()) > 0) {
                    // read the whole header
                }
                hdr.flip();
                ChunkFileHeader h = ChunkFileHeader.decode(hdr);
                if (size != ChunkFileHeader.SIZE + h.payloadLen()) {
                    throw new IllegalArgumentException("file is " + size + " bytes, header says "
                            + (ChunkFileHeader.SIZE + h.payloadLen()));
                }
                if (!name.equals(DiskIndex.fileName(h.key()))) {
                    throw new IllegalArgumentException("holds key " + h.key() + ", which belongs in "
                            + DiskIndex.fileName(h.key()));
                }
                index.entries.put(h.key(), new Entry(name, size, h.payloadLen(), h.payloadCrc(), index.tick()));
                index.used.addAndGet(size);
            } catch (java.nio.file.NoSuchFileException e) {
                // gone since the listing (evicted or replaced by a process writing there): not damaged
            } catch (java.nio.file.AccessDeniedException e) {
                // intact or not, this user cannot tell: not damaged, and not deleted
                unreadable++;
            } catch (IllegalArgumentException | IOException e) {
                index.counters.corrupt.increment();
                if (!index.readOnly) {
                    DiskIndex.deleteQuietly(p);
                }
            }
        }
        index.unreadable = unreadable;
        return temps;
    }

    private static long mtime(Path p) {
        try {
            return Files.getLastModifiedTime(p).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }
}
