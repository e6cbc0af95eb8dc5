package io.phxfs.kvcache;

import io.phxfs.kvcache.PromptChunks.Chunk;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Writes chunks the memory tier holds (pinned until written) to the tiers below, on threads of
 * its own. The queue's bound is the back-pressure: {@link #enqueue} waits while it is full. Owns
 * the queue and its threads; the engine starts them and stops them ({@link #close}) once.
 */
final class WriteBehind {
    private record WriteJob(Chunk chunk, MemoryTier.Pinned pinned, CompletableFuture<Boolean> done) {
    }

    private static final WriteJob STOP = new WriteJob(null, null, null);

    private final TierStack tiers;
    private final LongAdder writeFailures;
    private final BlockingQueue<WriteJob> queue;
    private final List<Thread> writers = new ArrayList<>();
    private final AtomicInteger pendingWrites = new AtomicInteger();
    /** Jobs a write-behind thread takes at once: the queue shared out among the threads. */
    private final int drainMax;
    private final int threads;
    /** Where {@link #flush} waits; notified when the last pending write finishes. */
    private final Object drained = new Object();

    WriteBehind(TierStack tiers, int queueChunks, int threads, LongAdder writeFailures) {
        this.tiers = tiers;
        this.writeFailures = writeFailures;
        // linked, not an array: write_queue_chunks is a bound, not an allocation (an array of a
        // large bound was allocated whole at the start: 2e9 was an OutOfMemoryError); what it
        // holds is bounded by the memory tier's slots anyway, each queued chunk pinned in one
        this.queue = new LinkedBlockingQueue<>(queueChunks);
        this.threads = threads;
        this.drainMax = Math.max(1, Math.min(DiskTier.GROUP, queueChunks / threads));
    }

    /** Daemon threads named {@code name-1}, {@code name-2}, ...: the engine's I/O and write-behind threads. */
    static ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /** Starts the writers; called once, before any {@link #enqueue}. */
    void start(ThreadFactory tf) {
        for (int i = 0; i < threads; i++) {
            Thread t = tf.newThread(this::writeBehind);
            t.start();
            writers.add(t); // only started threads: close() stops and joins each one it lists
        }
    }

    /** Chunks waiting in the queue now. */
    int depth() {
        return queue.size();
    }

    /**
     * Queues a chunk held pinned in the memory tier, waiting while the queue is full; the pin
     * is released once the chunk is written. The future says whether every lower tier took it.
     */
    CompletableFuture<Boolean> enqueue(Chunk c, MemoryTier.Pinned p) {
        WriteJob job = new WriteJob(c, p, new CompletableFuture<>());
        pendingWrites.incrementAndGet();
        try {
            queue.put(job); // back-pressure: waits while the lower tiers are behind
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.close();
            finishWrite();
            return CompletableFuture.completedFuture(false);
        }
        return job.done();
    }

    private void writeBehind() {
        for (;;) {
            WriteJob job;
            try {
                job = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            if (job == STOP) {
                return;
            }
            List<WriteJob> jobs = new ArrayList<>();
            jobs.add(job);
            boolean stop = false;
            while (jobs.size() < drainMax) {
                WriteJob next = queue.poll();
                if (next == null) {
                    break;
                }
                if (next == STOP) {
                    stop = true; // one STOP per writer: this one stops after its jobs
                    break;
                }
                jobs.add(next);
            }
            writeJobs(jobs);
            if (stop) {
                return;
            }
        }
    }

    /**
     * Writes queued chunks to the lower tiers: to the disk tier as one {@link DiskTier#putAll}
     * (the chunks that were waiting are synced together), to the Redis tier as one pipelined
     * {@link RedisTier#putAll} (their SETs in flight together, over a cluster's shards at once),
     * to any other one by one.
     */
    private void writeJobs(List<WriteJob> jobs) {
        boolean[] ok = new boolean[jobs.size()];
        Arrays.fill(ok, true);
        try {
            for (KvTier t : tiers.lower) {
                if (t == tiers.disk || t == tiers.redis) {
                    List<KvTier.Put> puts = new ArrayList<>(jobs.size());
                    for (WriteJob j : jobs) {
                        puts.add(new KvTier.Put(j.chunk().key(), j.chunk().tokens(), j.pinned().segment()));
                    }
                    boolean[] r = tiers.safePutAll(t, puts);
                    for (int i = 0; i < ok.length; i++) {
                        if (!r[i]) {
                            ok[i] = false;
                            writeFailures.increment();
                        }
                    }
                } else {
                    for (int i = 0; i < ok.length; i++) {
                        if (!tiers.safePut(t, jobs.get(i).chunk(), jobs.get(i).pinned().segment())) {
                            ok[i] = false;
                            writeFailures.increment();
                        }
                    }
                }
            }
        } catch (RuntimeException | Error e) {
            Arrays.fill(ok, false);
            writeFailures.increment();
        } finally {
            for (int i = 0; i < ok.length; i++) {
                WriteJob j = jobs.get(i);
                try {
                    j.pinned().close();
                } catch (RuntimeException | Error e) {
                    ok[i] = false;
                    writeFailures.increment();
                }
                j.done().complete(ok[i]);
                finishWrite();
            }
        }
    }

    private void finishWrite() {
        if (pendingWrites.decrementAndGet() == 0) {
            synchronized (drained) {
                drained.notifyAll();
            }
        }
    }

    /**
     * {@link KvCacheEngine#flush}: waits until every queued chunk is written.
     *
     * @throws InterruptedException when interrupted while waiting
     */
    void flush() throws InterruptedException {
        synchronized (drained) {
            while (pendingWrites.get() > 0) {
                drained.wait(100);
            }
        }
    }

    /** Finishes the queued writes and stops the threads; the engine calls it once, from its close. */
    void close() {
        try {
            flush();
            for (int i = 0; i < writers.size(); i++) {
                queue.put(STOP);
            }
            for (Thread t : writers) {
                t.join();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
