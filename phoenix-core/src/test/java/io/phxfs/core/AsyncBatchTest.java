package io.phxfs.core;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.core.Fixtures.PHX;
import static io.phxfs.core.Fixtures.dev0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** IoBatch.submitAsync (completion callback), cancel, and batches of reads and writes together. */
@Tag("io")
class AsyncBatchTest {
    @TempDir
    Path dir;

    /** Every thread of the process, the library's native ones included. */
    private static long osThreads() throws java.io.IOException {
        try (var tasks = java.nio.file.Files.list(Path.of("/proc/self/task"))) {
            return tasks.count();
        }
    }

    @Test
    void thousandBatchesInFlightHoldNoThreadEach() throws Exception {
        int batches = 1000;
        int chunk = 4096;
        byte[] data = Fixtures.random(batches * chunk, 51);
        Path p = Fixtures.writeFile(dir, "many.bin", data);
        Device d = dev0();
        List<IoBatch> all = new ArrayList<>();
        try (PhxFile f = PhxFile.open(p); RegisteredBuffer buf = d.allocate((long) batches * chunk)) {
            // One batch first, so that the library threads that run callbacks are already known to the JVM.
            try (IoBatch warm = IoBatch.create(1)) {
                warm.add(IoRequest.read(f, 0, buf, 0, chunk)).submitAsync().get(30, TimeUnit.SECONDS).throwIfFailed();
            }
            long before = osThreads();
            long peak = before;
            List<CompletableFuture<BatchResult>> futures = new ArrayList<>();
            for (int i = 0; i < batches; i++) {
                IoBatch b = IoBatch.create(1).add(IoRequest.read(f, (long) (batches - 1 - i) * chunk, buf, (long) i * chunk, chunk));
                all.add(b);
                futures.add(b.submitAsync());
                if (i % 50 == 0) {
                    peak = Math.max(peak, osThreads());
                }
            }
            for (int i = 0; i < batches; i++) {
                BatchResult r = futures.get(i).get(60, TimeUnit.SECONDS);
                assertEquals(chunk, r.result(0), "batch " + i + ": " + r);
            }
            long grown = Math.max(peak, osThreads()) - before;
            // The callbacks run on libphoenix's own threads (at most one per worker, attached once);
            // a thread per batch would show as hundreds.
            assertTrue(grown <= d.workers() + 4, "thread count grew by " + grown + " for " + batches
                    + " batches in flight (" + d.workers() + " workers)");
            byte[] got = Fixtures.contents(buf, 0, batches * chunk);
            for (int i = 0; i < batches; i++) {
                Fixtures.assertBytes(data, (batches - 1 - i) * chunk,
                        java.util.Arrays.copyOfRange(got, i * chunk, (i + 1) * chunk), "batch " + i);
            }
            for (IoBatch b : all) {
                assertFalse(b.isInFlight());
                assertEquals(chunk, b.bytesDone());
                b.close();
            }
        }
    }

    @Test
    void cancelStopsWhatHasNotStarted() throws Exception {
        int n = 4096;
        int chunk = 8192;
        byte[] data = Fixtures.random(n * chunk, 52);
        Path p = Fixtures.writeFile(dir, "cancel.bin", data);
        try (PhxFile f = PhxFile.open(p);
             RegisteredBuffer buf = PHX.host().allocate((long) n * chunk);
             IoBatch batch = IoBatch.create(n)) {
            for (int i = 0; i < n; i++) {
                batch.add(IoRequest.read(f, (long) i * chunk, buf, (long) i * chunk, chunk));
            }
            // Whether the workers have taken every task before cancel arrives is a race; over a
            // few rounds at least one cancel must meet untaken work, and every round's count must
            // match its results exactly.
            int stoppedSome = 0;
            for (int round = 0; round < 5 && stoppedSome == 0; round++) {
                CompletableFuture<BatchResult> future = batch.submitAsync();
                int cancelled = batch.cancel();
                BatchResult r = future.get(60, TimeUnit.SECONDS);
                int ecanceled = 0;
                for (int i = 0; i < n; i++) {
                    if (r.result(i) == -Errno.ECANCELED) {
                        ecanceled++;
                    } else {
                        assertEquals(chunk, r.result(i), "request " + i + " neither cancelled nor complete");
                        Fixtures.assertBytes(data, i * chunk, Fixtures.contents(buf, (long) i * chunk, chunk), "request " + i);
                    }
                }
                assertEquals(cancelled, ecanceled, "cancel's count against the results");
                assertEquals(ecanceled, r.failed());
                stoppedSome += cancelled;
            }
            assertTrue(stoppedSome > 0, "five cancels right after submitting " + n + " requests stopped none");
            assertEquals(0, batch.cancel(), "nothing in flight");
            // The batch is reusable and runs in full afterwards.
            assertEquals(0, batch.submitAsync().get(60, TimeUnit.SECONDS).failed());
        }
    }

    /**
     * A submitted batch reports when libphoenix queued it, took its first task and ended its
     * last, in that order and on System.nanoTime's clock (inside the caller's own before and
     * after); a batch run synchronously reports none.
     */
    @Test
    void aSubmittedBatchReportsWhenItRanOnTheCallersClock() throws Exception {
        int chunk = 1 << 20;
        byte[] data = Fixtures.random(8 * chunk, 57);
        Path p = Fixtures.writeFile(dir, "timed.bin", data);
        try (PhxFile f = PhxFile.open(p); RegisteredBuffer buf = dev0().allocate(8L * chunk); IoBatch batch = IoBatch.create()) {
            for (int i = 0; i < 8; i++) {
                batch.add(IoRequest.read(f, (long) i * chunk, buf, (long) i * chunk, chunk));
            }
            long before = System.nanoTime();
            BatchResult r = batch.submitAsync().get(60, TimeUnit.SECONDS);
            long after = System.nanoTime();
            r.throwIfFailed();
            String times = r.queuedNanos() + " / " + r.startedNanos() + " / " + r.finishedNanos() + " within " + before + ".." + after;
            assertTrue(before <= r.queuedNanos(), times);
            assertTrue(r.queuedNanos() <= r.startedNanos(), times);
            assertTrue(r.startedNanos() <= r.finishedNanos(), times);
            assertTrue(r.finishedNanos() <= after, times);
            Fixtures.assertBytes(data, 0, Fixtures.contents(buf, 0, 8 * chunk), "timed batch");
            BatchResult sync = batch.run();
            assertEquals(0, sync.failed());
            assertEquals(0, sync.finishedNanos(), "a synchronous run has no handle to ask");
        }
    }

    @Test
    void readsAndWritesToDifferentFilesInOneBatch() throws Exception {
        int chunk = 50_000;
        byte[] in = Fixtures.random(4 * chunk, 53);
        byte[] out = Fixtures.random(4 * chunk, 54);
        Path pin = Fixtures.writeFile(dir, "in.bin", in);
        Device d = dev0();
        for (boolean async : new boolean[] {true, false}) {
            Path pout = dir.resolve("out-" + async + ".bin");
            try (PhxFile fin = PhxFile.open(pin);
                 PhxFile fout = PhxFile.open(pout, OpenMode.WRITE, OpenMode.CREATE, OpenMode.TRUNCATE);
                 RegisteredBuffer src = d.allocate(4 * chunk);
                 RegisteredBuffer dst = PHX.host().allocate(4 * chunk);
                 IoBatch batch = IoBatch.create(8)) {
                Fixtures.fill(src, 0, out);
                for (int i = 0; i < 4; i++) {
                    batch.add(IoRequest.read(fin, (long) (3 - i) * chunk, dst, (long) i * chunk, chunk));
                    batch.add(IoRequest.write(fout, (long) i * chunk, src, (long) i * chunk, chunk));
                }
                BatchResult r = async ? batch.submitAsync().get(60, TimeUnit.SECONDS) : batch.run();
                assertEquals(0, r.failed(), r.toString());
                assertFalse(r.isWrite());
                for (int i = 0; i < 8; i++) {
                    assertEquals(i % 2 == 1, r.isWrite(i), "request " + i);
                    assertEquals(chunk, r.result(i));
                }
                for (int i = 0; i < 4; i++) {
                    Fixtures.assertBytes(in, (3 - i) * chunk, Fixtures.contents(dst, (long) i * chunk, chunk),
                            "read " + i + (async ? " (async)" : " (run)"));
                }
            }
            Fixtures.assertBytes(out, Files.readAllBytes(pout), "written file" + (async ? " (async)" : " (run)"));
        }
    }

    @Test
    void closingWhileInFlightFreesOnCompletion() throws Exception {
        byte[] data = Fixtures.random(1 << 20, 55);
        Path p = Fixtures.writeFile(dir, "close.bin", data);
        try (PhxFile f = PhxFile.open(p); RegisteredBuffer buf = dev0().allocate(1 << 20)) {
            IoBatch batch = IoBatch.create(16);
            for (int i = 0; i < 16; i++) {
                batch.add(IoRequest.read(f, (long) i << 16, buf, (long) i << 16, 1 << 16));
            }
            CompletableFuture<BatchResult> future = batch.submitAsync();
            batch.close(); // deferred to the callback
            assertEquals(1 << 20, future.get(60, TimeUnit.SECONDS).throwIfFailed().totalBytes());
            Fixtures.assertBytes(data, Fixtures.contents(buf, 0, 1 << 20), "read before close");
            assertTrue(IoBatch.create(1).submitAsync().isDone(), "an empty batch completes at once");
        }
    }
}
