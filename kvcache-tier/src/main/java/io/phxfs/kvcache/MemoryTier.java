package io.phxfs.kvcache;

import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Host memory: one pool allocated when the tier is created (pinned, so that device copies run
 * at full speed where an accelerator is present) and cut into fixed slots of one full chunk
 * each; least recently used entries are evicted when it is full. Nothing is allocated per
 * chunk: fresh memory costs a page fault per 4 KiB (1 to 3.5 GB/s on the build machine against
 * 19 GB/s for copies into touched memory), so the pool is touched once, up front.
 *
 * <p>Entries being read or waiting to be written to a lower tier are pinned and never evicted.
 */
public final class MemoryTier implements KvTier {
    private final RegisteredBuffer pool;
    private final MemorySegment bytes;
    private final long slotBytes;
    private final long capacity;
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    /** Access-ordered: the first entry is the least recently used. Guarded by this. */
    private final LinkedHashMap<String, Entry> map = new LinkedHashMap<>(64, 0.75f, true);
    private final Counters c = new Counters();
    private long used;
    private boolean closed;

    private static final class Entry {
        final int slot;
        final long length;
        int pins;
        boolean removed;

        Entry(int slot, long length) {
            this.slot = slot;
            this.length = length;
        }
    }

    /**
     * A pool of {@code capBytes / slotBytes} slots.
     *
     * @param capBytes  the byte cap ({@code max_local_cpu_size})
     * @param slotBytes bytes of one full chunk
     * @throws IllegalArgumentException when the cap holds not even one chunk
     */
    public MemoryTier(long capBytes, long slotBytes) {
        if (slotBytes <= 0) {
            throw new IllegalArgumentException("memory tier: slot size must be > 0, was " + slotBytes);
        }
        // the pool is allocated and touched whole right here: a cap past the machine's memory
        // would fail the allocation with a message that names no setting, or (where the kernel
        // overcommits) have the kernel's OOM killer end the process while it is touched
        long machine = machineBytes();
        if (capBytes > machine) {
            throw new IllegalArgumentException("max_local_cpu_size " + capBytes + " bytes is more than this machine's memory ("
                    + machine + " bytes, MemTotal in /proc/meminfo): the memory tier allocates and touches it all at the start;"
                    + " lower it");
        }
        long slots = capBytes / slotBytes;
        if (slots < 1) {
            throw new IllegalArgumentException("max_local_cpu_size " + capBytes + " bytes holds no chunk of "
                    + slotBytes + " bytes: raise it or set local_cpu: false");
        }
        if (slots > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("max_local_cpu_size " + capBytes + " bytes: too many slots");
        }
        this.slotBytes = slotBytes;
        this.capacity = slots * slotBytes;
        this.pool = allocate(capacity);
        this.bytes = pool.segment().orElseThrow();
        // touch every page now, so that no store pays the page faults
        bytes.fill((byte) 0);
        for (int i = 0; i < slots; i++) {
            free.add(i);
        }
    }

    /** The pool, or an exception that names the setting when the allocation fails. */
    private static RegisteredBuffer allocate(long capacity) {
        try {
            return Phoenix.open().host().allocatePinned(capacity);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("max_local_cpu_size " + capacity + " bytes: the memory tier's pool cannot be"
                    + " allocated (" + e.getMessage() + "); lower it", e);
        }
    }

    /** MemTotal of /proc/meminfo in bytes, or Long.MAX_VALUE where it cannot be read. */
    static long machineBytes() {
        try (var lines = java.nio.file.Files.lines(java.nio.file.Path.of("/proc/meminfo"))) {
            return lines.filter(l -> l.startsWith("MemTotal:")).findFirst()
                    .map(l -> Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024).orElse(Long.MAX_VALUE);
        } catch (java.io.IOException | java.io.UncheckedIOException | NumberFormatException e) {
            return Long.MAX_VALUE;
        }
    }

    @Override
    public String name() {
        return "memory";
    }

    /**
     * Bytes of one slot (one full chunk).
     *
     * @return the slot size
     */
    public long slotBytes() {
        return slotBytes;
    }

    @Override
    public synchronized boolean contains(CacheKey key) {
        return !closed && map.get(key.toString()) != null;
    }

    @Override
    public boolean put(CacheKey key, KvLayout layout, int tokens, MemorySegment payload) {
        Pinned p = putPinned(key, payload);
        if (p == null) {
            return false;
        }
        p.close();
        return true;
    }

    /**
     * Stores like {@link #put} and returns the entry pinned (or null when it could not be
     * stored), so that a write-behind can read it before it is evicted.
     */
    Pinned putPinned(CacheKey key, MemorySegment payload) {
        return putPinned(key, payload.byteSize(), slot -> MemorySegment.copy(payload, 0, slot, 0, slot.byteSize()));
    }

    /**
     * Stores {@code len} bytes that {@code fill} writes into the slot it is given (so that a
     * device chunk or gathered tensors land in the pool with one copy); returns the entry pinned,
     * or null when it could not be stored. An exception from {@code fill} frees the slot and is
     * rethrown.
     */
    Pinned putPinned(CacheKey key, long len, java.util.function.Consumer<MemorySegment> fill) {
        String k = key.toString();
        int slot;
        synchronized (this) {
            if (closed || len > slotBytes) {
                c.failedPuts.increment();
                return null;
            }
            Entry e = map.get(k);
            if (e != null) {
                e.pins++;
                return new Pinned(e, k);
            }
            if (free.isEmpty() && !evictOne()) {
                c.failedPuts.increment();
                return null;
            }
            slot = free.poll();
        }
        // the slot is ours alone until it is in the map: copy outside the lock
        try {
            fill.accept(bytes.asSlice(slot * slotBytes, len));
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                free.add(slot);
            }
            throw e;
        }
        synchronized (this) {
            if (closed) {
                c.failedPuts.increment();
                return null;
            }
            Entry e = map.get(k);
            if (e != null) { // another thread stored it meanwhile
                free.add(slot);
                e.pins++;
                return new Pinned(e, k);
            }
            e = new Entry(slot, len);
            e.pins = 1;
            map.put(k, e);
            used += len;
            c.puts.increment();
            c.bytesWritten.add(len);
            return new Pinned(e, k);
        }
    }

    /** Evicts the least recently used unpinned entry; false when every entry is pinned. Holds this. */
    private boolean evictOne() {
        for (Iterator<Map.Entry<String, Entry>> it = map.entrySet().iterator(); it.hasNext(); ) {
            Entry e = it.next().getValue();
            if (e.pins == 0) {
                it.remove();
                free.add(e.slot);
                used -= e.length;
                c.evictions.increment();
                return true;
            }
        }
        return false;
    }

    @Override
    public boolean get(CacheKey key, MemorySegment dst) {
        try (Pinned p = pin(key)) {
            if (p == null || p.segment().byteSize() != dst.byteSize()) {
                if (p != null) {
                    c.hits.decrement(); // counted by pin: this one is a miss after all
                    c.bytesRead.add(-p.segment().byteSize());
                    c.misses.increment();
                }
                return false;
            }
            MemorySegment.copy(p.segment(), 0, dst, 0, dst.byteSize());
            return true;
        }
    }

    /** The entry pinned (a hit, counted with its bytes as read), or null (a miss, counted). */
    Pinned pin(CacheKey key) {
        String k = key.toString();
        synchronized (this) {
            Entry e = closed ? null : map.get(k);
            if (e == null) {
                c.misses.increment();
                return null;
            }
            e.pins++;
            c.hits.increment();
            c.bytesRead.add(e.length);
            return new Pinned(e, k);
        }
    }

    @Override
    public synchronized void remove(CacheKey key) {
        Entry e = map.remove(key.toString());
        if (e != null) {
            e.removed = true;
            used -= e.length;
            if (e.pins == 0) {
                free.add(e.slot);
            }
        }
    }

    @Override
    public synchronized TierStats stats() {
        return c.snapshot(name(), map.size(), used, capacity);
    }

    /** Closes the pool once no entry is pinned; a second call does nothing. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            map.clear();
            used = 0;
        }
        pool.close();
    }

    /** A pinned entry: its bytes stay put until closed. */
    final class Pinned implements AutoCloseable {
        private final Entry e;
        private boolean released;

        Pinned(Entry e, String key) {
            this.e = e;
        }

        MemorySegment segment() {
            return bytes.asSlice(e.slot * slotBytes, e.length);
        }

        @Override
        public void close() {
            synchronized (MemoryTier.this) {
                if (released) {
                    return;
                }
                released = true;
                e.pins--;
                if (e.pins == 0 && e.removed) {
                    free.add(e.slot);
                }
            }
        }
    }
}
