package io.phxfs.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * {@link BatchWait} against futures completed by another thread, as libphoenix's completion
 * thread completes a load's: the result, the failures, progress, interrupts, and that a batch
 * whose last bytes stall does not keep the waiting thread spinning.
 */
class BatchWaitTest {
    private static final long PERIOD = TimeUnit.MILLISECONDS.toNanos(20);

    /** Completes {@code f} with {@code value} after {@code ms}, moving {@code moved} to {@code bytes} meanwhile. */
    private static Thread completeLater(CompletableFuture<String> f, String value, long ms, AtomicLong moved, long bytes) {
        return Thread.ofPlatform().start(() -> {
            long start = System.nanoTime();
            long end = start + TimeUnit.MILLISECONDS.toNanos(ms);
            while (System.nanoTime() < end) {
                moved.set(bytes * (System.nanoTime() - start) / (end - start));
                sleepQuietly(1);
            }
            moved.set(bytes);
            f.complete(value);
        });
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void returnsTheResultAndReportsProgressWhileWaiting() throws Exception {
        CompletableFuture<String> f = new CompletableFuture<>();
        AtomicLong moved = new AtomicLong();
        List<Long> reports = new CopyOnWriteArrayList<>();
        long start = System.nanoTime();
        Thread t = completeLater(f, "done", 150, moved, 1000);
        String r = BatchWait.await(f, moved::get, 1000, start, reports::add, PERIOD);
        t.join();
        assertEquals("done", r);
        assertTrue(reports.size() >= 2, "progress reported while waiting: " + reports);
        for (int i = 1; i < reports.size(); i++) {
            assertTrue(reports.get(i) >= reports.get(i - 1), "progress never goes back: " + reports);
        }
        assertTrue(reports.getLast() <= 1000, "never more than the batch: " + reports);
    }

    /**
     * Without a listener the end is still estimated again every period: a first estimate made
     * before anything moved must not park the thread until the batch ends (it would then wake
     * late, which the spin is there to avoid).
     */
    @Test
    void withoutAListenerTheEndIsEstimatedAgain() throws Exception {
        CompletableFuture<String> f = new CompletableFuture<>();
        AtomicLong moved = new AtomicLong();
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        Thread t = completeLater(f, "done", 150, moved, 1000);
        String r = BatchWait.await(f, () -> {
            asked.incrementAndGet();
            return moved.get();
        }, 1000, System.nanoTime(), null, PERIOD);
        t.join();
        assertEquals("done", r);
        assertTrue(asked.get() >= 3, "the bytes moved were asked " + asked.get() + " times over 150 ms");
    }

    @Test
    void aFailedBatchThrowsItsOwnException() {
        CompletableFuture<String> f = new CompletableFuture<>();
        IllegalStateException failure = new IllegalStateException("the batch failed");
        Thread.ofPlatform().start(() -> {
            sleepQuietly(30);
            f.completeExceptionally(failure);
        });
        IllegalStateException thrown = assertThrows(IllegalStateException.class,
                () -> BatchWait.await(f, () -> 10, 1000, System.nanoTime(), null, PERIOD));
        assertSame(failure, thrown);
    }

    @Test
    void anInterruptWaitsForTheBatchAndIsKept() throws Exception {
        CompletableFuture<String> f = new CompletableFuture<>();
        AtomicLong moved = new AtomicLong();
        Thread.currentThread().interrupt();
        Thread t = completeLater(f, "after", 80, moved, 1000);
        try {
            assertEquals("after", BatchWait.await(f, moved::get, 1000, System.nanoTime(), null, PERIOD));
            assertTrue(f.isDone(), "returned only once the batch ended");
            assertTrue(Thread.currentThread().isInterrupted(), "the interrupt is kept for the caller");
        } finally {
            Thread.interrupted();
            t.join();
        }
    }

    /**
     * A listener that throws (an exception or an Error) and a poll of the bytes moved that
     * throws: each time the wait goes on until the batch ends (the buffers stay in use until
     * then), then the failure propagates as thrown.
     */
    @Test
    void aFailingListenerOrPollWaitsForTheBatchThenThrows() throws Exception {
        assertWaitsThenThrows(new IllegalArgumentException("listener"), false);
        assertWaitsThenThrows(new AssertionError("listener error"), false);
        assertWaitsThenThrows(new IllegalStateException("poll failed"), true);
    }

    /** The failure itself (a RuntimeException or an Error), to throw where no checked exception may go. */
    private static RuntimeException unchecked(Throwable failure) {
        if (failure instanceof Error e) {
            throw e;
        }
        return (RuntimeException) failure;
    }

    private static void assertWaitsThenThrows(Throwable failure, boolean inPoll) throws Exception {
        CompletableFuture<String> f = new CompletableFuture<>();
        AtomicLong moved = new AtomicLong();
        Thread t = completeLater(f, "x", 120, moved, 1000);
        java.util.function.LongSupplier poll = () -> {
            if (inPoll) {
                throw unchecked(failure);
            }
            return moved.get();
        };
        java.util.function.LongConsumer listener = inPoll ? null : done -> {
            throw unchecked(failure);
        };
        Throwable thrown = assertThrows(Throwable.class,
                () -> BatchWait.await(f, poll, 1000, System.nanoTime(), listener, PERIOD));
        assertSame(failure, thrown);
        assertTrue(f.isDone(), failure + ": returned before the batch ended");
        t.join();
    }

    /**
     * All bytes but the last few moved at once, then a long stall (a cold last read): the
     * estimate says "any moment" the whole time. The waiting thread spins a few milliseconds,
     * then parks longer and longer: over 400 ms it may use a fraction of a core, not all of it.
     */
    @Test
    void aStalledEndDoesNotKeepTheThreadSpinning() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isReadable(Path.of("/proc/thread-self/schedstat")),
                "a kernel without CONFIG_SCHED_INFO has no per-thread CPU time to read");
        CompletableFuture<String> f = new CompletableFuture<>();
        Thread t = Thread.ofPlatform().start(() -> {
            sleepQuietly(400);
            f.complete("late");
        });
        long cpu0 = threadCpuNanos();
        long wall0 = System.nanoTime();
        String r = BatchWait.await(f, () -> 999, 1000, System.nanoTime() - 1_000_000, null, PERIOD);
        long wall = System.nanoTime() - wall0;
        long cpu = threadCpuNanos() - cpu0;
        t.join();
        assertEquals("late", r);
        assertTrue(wall >= TimeUnit.MILLISECONDS.toNanos(350), "waited for the batch: " + wall);
        assertTrue(cpu < wall / 3, "spun " + cpu / 1e6 + " ms of CPU over " + wall / 1e6 + " ms");
    }

    /** This thread's time on a CPU so far (Linux: the first field of /proc/thread-self/schedstat). */
    private static long threadCpuNanos() throws IOException {
        return Long.parseLong(Files.readString(Path.of("/proc/thread-self/schedstat")).trim().split("\\s+")[0]);
    }

    @Test
    void theEndIsEstimatedFromTheRateSoFar() {
        assertEquals(Long.MAX_VALUE, BatchWait.remainingNanos(0, 1000, 5_000_000), "nothing moved: no estimate");
        assertEquals(0, BatchWait.remainingNanos(1000, 1000, 5_000_000));
        assertEquals(5_000_000, BatchWait.remainingNanos(500, 1000, 5_000_000));
        assertEquals(15_000_000, BatchWait.remainingNanos(250, 1000, 5_000_000));
        assertFalse(BatchWait.remainingNanos(1, Long.MAX_VALUE, Long.MAX_VALUE / 2) < 0, "no overflow");
    }
}
