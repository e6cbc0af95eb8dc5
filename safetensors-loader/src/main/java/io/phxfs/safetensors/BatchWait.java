package io.phxfs.safetensors;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * Waits for a load's batch: parked while its end is far, then spinning on the future over the
 * last stretch. A parked thread takes 0.2-0.3 ms to run again once the completion wakes it on
 * the H200's VM (an idle virtual CPU is woken by an interrupt through the host), and a load has
 * no other work left at that point: the spin takes the wake-up off every load's time, for about
 * a millisecond of one core (perf-3 session 17, docs/benchmarks.md). The end is estimated from
 * the bytes moved so far; when the estimate misleads (the last reads stall on a disk), a spin
 * gives up after {@link #SPIN_LIMIT_NANOS} and the next one waits 10 ms, then 20, up to 200 ms,
 * so that a stalled end costs a falling fraction of a core; the thread still wakes to report
 * progress meanwhile.
 */
final class BatchWait {
    /** How long before the estimated end the thread stops parking. */
    static final long SPIN_NANOS = 1_000_000L;
    /** The longest one spin lasts before the thread parks and estimates again. */
    static final long SPIN_LIMIT_NANOS = 4_000_000L;
    /** The shortest park between estimates. */
    private static final long MIN_PARK_NANOS = 200_000L;
    /** How long after the first spin that gave up the next may start; it doubles after each. */
    private static final long BACKOFF_NANOS = 10_000_000L;
    private static final long MAX_BACKOFF_NANOS = 200_000_000L;

    private BatchWait() {
    }

    /**
     * The batch's result. {@code bytesDone}: the batch's bytes moved so far, of {@code bytes},
     * since {@code startNanos} ({@link System#nanoTime()}); the end is estimated again at least
     * every {@code periodNanos}, and {@code progress}, when not null, is told the bytes moved as
     * often. An interrupt is kept for the caller: the batch writes into the caller's buffers, so
     * this waits for it to end, also when {@code progress} or {@code bytesDone} throws (which is
     * then rethrown).
     */
    static <T> T await(CompletableFuture<T> f, LongSupplier bytesDone, long bytes, long startNanos,
                       LongConsumer progress, long periodNanos) {
        boolean interrupted = false;
        long nextReport = startNanos + periodNanos;
        long backoff = 0;
        long noSpinBefore = startNanos; // after a spin that gave up: the next one waits
        try {
            while (!f.isDone()) {
                long now = System.nanoTime();
                long done;
                try {
                    done = bytesDone.getAsLong();
                    if (progress != null && now - nextReport >= 0) {
                        progress.accept(done);
                        nextReport = now + periodNanos;
                    }
                } catch (Throwable t) {
                    f.handle((r, x) -> null).join(); // the buffers stay in use until the batch ends
                    throw t;
                }
                long left = remainingNanos(done, bytes, now - startNanos);
                if (left <= SPIN_NANOS && now - noSpinBefore >= 0) {
                    if (spin(f)) {
                        break;
                    }
                    backoff = backoff == 0 ? BACKOFF_NANOS : Math.min(MAX_BACKOFF_NANOS, 2 * backoff);
                    now = System.nanoTime();
                    noSpinBefore = now + backoff;
                }
                // at most a period: the first estimate, made before anything moved, says nothing
                long park = Math.min(periodNanos, Math.max(MIN_PARK_NANOS, left - SPIN_NANOS));
                if (now - noSpinBefore < 0) {
                    park = Math.max(park, noSpinBefore - now);
                }
                if (progress != null) {
                    park = Math.min(park, Math.max(MIN_PARK_NANOS, nextReport - now));
                }
                try {
                    f.get(park, TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    // estimate again
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    break; // reported below
                }
            }
            try {
                return f.join();
            } catch (CompletionException e) {
                throw e.getCause() instanceof RuntimeException re ? re : e;
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Nanoseconds until the batch should end at the rate so far; {@link Long#MAX_VALUE} before
     * anything has moved.
     */
    static long remainingNanos(long done, long bytes, long elapsedNanos) {
        if (done <= 0 || elapsedNanos <= 0) {
            return Long.MAX_VALUE;
        }
        if (done >= bytes) {
            return 0;
        }
        double left = (double) (bytes - done) * elapsedNanos / done;
        return left >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) left;
    }

    /** Spins until {@code f} is done (true) or for {@link #SPIN_LIMIT_NANOS} (false). */
    private static boolean spin(CompletableFuture<?> f) {
        long until = System.nanoTime() + SPIN_LIMIT_NANOS;
        while (!f.isDone()) {
            if (System.nanoTime() - until >= 0) {
                return false;
            }
            Thread.onSpinWait();
        }
        return true;
    }
}
