package io.phxfs.safetensors;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * SHA-256 of loaded tensors, computed from the memory they were loaded into (device memory
 * is copied back in chunks), never by reading the file again.
 */
public final class TensorDigests {
    /** Copy-back chunk for device memory. */
    static final long CHUNK = 64L << 20;

    private TensorDigests() {
    }

    /**
     * Lower-case hex SHA-256 of one tensor's bytes.
     *
     * @param t the tensor to hash
     * @return the digest as 64 hex digits
     */
    public static String sha256(LoadedTensor t) {
        try (Arena arena = Arena.ofConfined()) {
            Staging staging = new Staging(arena);
            return hex(digest(t, staging));
        }
    }

    /**
     * SHA-256 of every tensor of {@code model}, in model order, hashed by several threads.
     *
     * @param model the loaded model
     * @return each tensor's digest by name, in model order
     */
    public static Map<String, String> sha256(LoadedModel model) {
        List<LoadedTensor> tensors = new ArrayList<>(model.tensors().values());
        String[] out = new String[tensors.size()];
        int threads = Math.max(1, Math.min(Math.min(4, Runtime.getRuntime().availableProcessors()), tensors.size()));
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable worker = () -> {
            try (Arena arena = Arena.ofConfined()) {
                Staging staging = new Staging(arena);
                for (int i; (i = next.getAndIncrement()) < tensors.size() && failure.get() == null; ) {
                    out[i] = hex(digest(tensors.get(i), staging));
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        };
        List<Thread> pool = new ArrayList<>();
        for (int i = 1; i < threads; i++) {
            pool.add(Thread.ofPlatform().name("sha256-" + i).start(worker));
        }
        worker.run();
        for (Thread th : pool) {
            try {
                th.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while hashing tensors", e);
            }
        }
        Throwable f = failure.get();
        if (f instanceof RuntimeException re) {
            throw re;
        }
        if (f instanceof Error err) {
            throw err;
        }
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < out.length; i++) {
            m.put(tensors.get(i).name(), out[i]);
        }
        return m;
    }

    private static byte[] digest(LoadedTensor t, Staging staging) {
        MessageDigest md = newSha256();
        long n = t.nbytes();
        Optional<MemorySegment> direct = t.segment();
        for (long off = 0; off < n; off += CHUNK) {
            long len = Math.min(CHUNK, n - off);
            if (direct.isPresent()) {
                md.update(direct.get().asSlice(off, len).asByteBuffer());
            } else {
                MemorySegment s = staging.get(len);
                t.copyTo(off, s);
                md.update(s.asByteBuffer());
            }
        }
        return md.digest();
    }

    /** One host segment per thread, grown to the largest chunk needed so far. */
    private static final class Staging {
        private final Arena arena;
        private MemorySegment seg;

        Staging(Arena arena) {
            this.arena = arena;
        }

        MemorySegment get(long len) {
            if (seg == null || seg.byteSize() < len) {
                seg = arena.allocate(len, 4096);
            }
            return seg.asSlice(0, len);
        }
    }

    private static MessageDigest newSha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JRE", e);
        }
    }

    private static String hex(byte[] b) {
        return HexFormat.of().formatHex(b);
    }
}
