package io.phxfs.core;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.core.Fixtures.PHX;
import static io.phxfs.core.Fixtures.dev0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Tag("io")
class IoBatchTest {
    private static final int CHUNK = 9_001;

    @TempDir
    Path dir;

    @Test
    void layoutMatchesPhxfsIoReqT() {
        assertEquals(48, IoBatch.REQ_LAYOUT.byteSize());
        assertEquals(8, IoBatch.REQ_LAYOUT.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("buf")));
        assertEquals(40, IoBatch.REQ_LAYOUT.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("result")));
    }

    /** Eight reads alternating host and device memory from two files, at odd offsets. */
    private static IoBatch mixedReads(IoBatch batch, PhxFile a, PhxFile b, RegisteredBuffer host, RegisteredBuffer dev) {
        for (int i = 0; i < 8; i++) {
            RegisteredBuffer buf = i % 2 == 0 ? host : dev;
            batch.add(IoRequest.read(i < 4 ? a : b, 17 + i * 12_345L, buf, 3 + (i / 2) * CHUNK, CHUNK));
        }
        return batch;
    }

    private static void checkMixedReads(BatchResult r, byte[] a, byte[] b, RegisteredBuffer host, RegisteredBuffer dev) {
        assertEquals(8, r.size());
        assertEquals(0, r.failed(), r.toString());
        assertEquals(8L * CHUNK, r.totalBytes());
        for (int i = 0; i < 8; i++) {
            assertEquals(CHUNK, r.result(i));
            RegisteredBuffer buf = i % 2 == 0 ? host : dev;
            Fixtures.assertBytes(i < 4 ? a : b, 17 + i * 12_345, Fixtures.contents(buf, 3 + (i / 2) * CHUNK, CHUNK),
                    "request " + i);
        }
    }

    @Test
    void mixedHostAndDeviceReads() throws IOException {
        byte[] a = Fixtures.random(200_000, 1);
        byte[] b = Fixtures.random(200_000, 2);
        try (PhxFile fa = PhxFile.open(Fixtures.writeFile(dir, "a.bin", a));
             PhxFile fb = PhxFile.open(Fixtures.writeFile(dir, "b.bin", b));
             RegisteredBuffer host = PHX.host().allocate(4 * CHUNK + 3);
             RegisteredBuffer dev = dev0().allocate(4 * CHUNK + 3);
             IoBatch batch = IoBatch.create(8)) {
            checkMixedReads(mixedReads(batch, fa, fb, host, dev).run(), a, b, host, dev);
            // The same batch runs again without being rebuilt.
            Fixtures.fillByte(host, (byte) 0);
            Fixtures.fillByte(dev, (byte) 0);
            checkMixedReads(batch.run().throwIfFailed(), a, b, host, dev);
        }
    }

    @Test
    void bytesDoneCountsWhatTheSubmittedBatchMoved() throws Exception {
        byte[] a = Fixtures.random(3 << 20, 9);
        try (PhxFile fa = PhxFile.open(Fixtures.writeFile(dir, "progress.bin", a));
             RegisteredBuffer dev = dev0().allocate(a.length);
             IoBatch batch = IoBatch.create(3)) {
            assertEquals(0, batch.bytesDone());
            for (int i = 0; i < 3; i++) {
                batch.add(IoRequest.read(fa, i << 20, dev, i << 20, 1 << 20));
            }
            CompletableFuture<BatchResult> f = batch.submit();
            long seen = batch.bytesDone();
            assertTrue(seen >= 0 && seen <= a.length, "bytes done " + seen);
            f.get(30, TimeUnit.SECONDS).throwIfFailed();
            assertEquals(a.length, batch.bytesDone());
            Fixtures.assertBytes(a, 0, Fixtures.contents(dev, 0, a.length), "progress batch");
        }
    }

    @Test
    void asyncSubmitCompletesWithPerRequestResults() throws Exception {
        byte[] a = Fixtures.random(200_000, 3);
        byte[] b = Fixtures.random(200_000, 4);
        try (PhxFile fa = PhxFile.open(Fixtures.writeFile(dir, "a.bin", a));
             PhxFile fb = PhxFile.open(Fixtures.writeFile(dir, "b.bin", b));
             RegisteredBuffer host = PHX.host().allocate(4 * CHUNK + 3);
             RegisteredBuffer dev = dev0().allocate(4 * CHUNK + 3);
             IoBatch batch = IoBatch.create(8)) {
            CompletableFuture<BatchResult> f = mixedReads(batch, fa, fb, host, dev).submit();
            BatchResult r = f.get(30, TimeUnit.SECONDS);
            checkMixedReads(r, a, b, host, dev);
            assertFalse(batch.isInFlight());
            // Reusable once the future has completed.
            batch.clear();
            batch.add(IoRequest.read(fa, 0, host, 0, 10));
            assertEquals(10, batch.submit().get(30, TimeUnit.SECONDS).result(0));
        }
    }

    @Test
    void mixedHostAndDeviceWrites() throws Exception {
        byte[] h = Fixtures.random(4 * CHUNK, 5);
        byte[] d = Fixtures.random(4 * CHUNK, 6);
        Path out = dir.resolve("out.bin");
        try (PhxFile f = PhxFile.open(out, OpenMode.WRITE, OpenMode.CREATE);
             RegisteredBuffer host = PHX.host().allocate(4 * CHUNK);
             RegisteredBuffer dev = dev0().allocate(4 * CHUNK);
             IoBatch batch = IoBatch.create(8)) {
            Fixtures.fill(host, 0, h);
            Fixtures.fill(dev, 0, d);
            for (int i = 0; i < 4; i++) {
                batch.add(IoRequest.write(f, 1 + 2L * i * CHUNK, host, (long) i * CHUNK, CHUNK));
                batch.add(IoRequest.write(f, 1 + (2L * i + 1) * CHUNK, dev, (long) i * CHUNK, CHUNK));
            }
            for (BatchResult r : new BatchResult[] {batch.run(), batch.submit().get(30, TimeUnit.SECONDS)}) {
                assertTrue(r.isWrite());
                assertEquals(0, r.failed(), r.toString());
                assertEquals(8L * CHUNK, r.totalBytes());
            }
        }
        byte[] file = Files.readAllBytes(out);
        assertEquals(1 + 8 * CHUNK, file.length);
        for (int i = 0; i < 4; i++) {
            Fixtures.assertBytes(h, i * CHUNK, Arrays.copyOfRange(file, 1 + 2 * i * CHUNK, 1 + (2 * i + 1) * CHUNK),
                    "host chunk " + i);
            Fixtures.assertBytes(d, i * CHUNK, Arrays.copyOfRange(file, 1 + (2 * i + 1) * CHUNK, 1 + (2 * i + 2) * CHUNK),
                    "device chunk " + i);
        }
    }

    @Test
    void failedRequestsAreReportedOneByOne() throws Exception {
        byte[] a = Fixtures.random(100_000, 7);
        Path pa = Fixtures.writeFile(dir, "a.bin", a);
        Path wo = Fixtures.writeFile(dir, "write-only.bin", new byte[4096]);
        try (PhxFile fa = PhxFile.open(pa);
             PhxFile fw = PhxFile.open(wo, OpenMode.WRITE);
             RegisteredBuffer host = PHX.host().allocate(65_536);
             RegisteredBuffer dev = dev0().allocate(65_536);
             IoBatch batch = IoBatch.create(4)) {
            batch.add(IoRequest.read(fa, 0, host, 0, 1000))
                    .add(IoRequest.read(fa, 0, dev, 65_536 - 10, 100)) // past the registration
                    .add(IoRequest.read(fw, 0, host, 2000, 100))       // file not open for reading
                    .add(IoRequest.read(fa, 99_900, dev, 0, 500));     // short at end of file
            for (BatchResult r : new BatchResult[] {batch.run(), batch.submit().get(30, TimeUnit.SECONDS)}) {
                assertEquals(1000, r.result(0));
                assertEquals(-Errno.EFAULT, r.result(1));
                assertEquals(-Errno.EBADF, r.result(2));
                assertEquals(100, r.result(3));
                assertEquals(2, r.failed());
                assertEquals(1100, r.totalBytes());
                PhoenixException e = assertThrows(PhoenixException.class, r::throwIfFailed);
                assertEquals(Errno.EFAULT, e.errno());
                assertTrue(e.getMessage().startsWith("batch request 1 of 4: read(" + pa), e.getMessage());
                assertTrue(e.getMessage().contains("and 1 more failed"), e.getMessage());
                Fixtures.assertBytes(a, 0, Fixtures.contents(host, 0, 1000), "request 0");
                Fixtures.assertBytes(a, 99_900, Fixtures.contents(dev, 0, 100), "request 3");
            }
        }
    }

    @Test
    void batchRulesAreEnforced() throws IOException {
        Path p = Fixtures.writeFile(dir, "r.bin", new byte[4096]);
        try (PhxFile f = PhxFile.open(p, OpenMode.READ, OpenMode.WRITE);
             RegisteredBuffer host = PHX.host().allocate(4096);
             IoBatch batch = IoBatch.create(2)) {
            assertEquals(0, batch.run().size(), "an empty batch is a no-op");
            batch.add(IoRequest.read(f, 0, host, 0, 10));
            batch.add(IoRequest.read(f, 10, host, 10, 10));
            batch.add(IoRequest.read(f, 20, host, 20, 10)); // past the initial capacity: it grows
            assertEquals(3, batch.size());
            assertTrue(batch.capacity() >= 3, batch.toString());
            assertThrows(IllegalArgumentException.class, () -> IoRequest.read(f, -1, host, 0, 10));
            assertThrows(IllegalArgumentException.class, () -> IoRequest.read(f, 0, host, 0, -10));
            assertEquals(Errno.EFAULT, assertThrows(PhoenixException.class,
                    () -> IoBatch.create(1).add(IoRequest.read(f, 0, host, 4090, 10))).errno());
            batch.clear();
            assertEquals(0, batch.size());
            batch.add(IoRequest.write(f, 0, host, 0, 10));
            assertEquals(10, batch.run().result(0));
        }
        IoBatch closed = IoBatch.create(1);
        closed.close();
        closed.close();
        assertThrows(IllegalStateException.class, closed::run);
        assertThrows(IllegalArgumentException.class, () -> IoBatch.create(0));
    }

    /**
     * A batch created with room for one request takes many more, each landing where its
     * IoRequest says: the old fixed capacity made a large file fail with "batch full".
     */
    @Test
    void batchGrowsPastItsInitialCapacity() throws IOException {
        int n = 1000;
        int len = 100;
        byte[] data = Fixtures.random(n * len, 7);
        Path p = Fixtures.writeFile(dir, "grow.bin", data);
        try (PhxFile f = PhxFile.open(p, OpenMode.READ);
             RegisteredBuffer host = PHX.host().allocate(data.length);
             IoBatch batch = IoBatch.create(1)) {
            for (int i = 0; i < n; i++) {
                // reversed, so that a request that kept another's offsets would show
                batch.add(IoRequest.read(f, (long) (n - 1 - i) * len, host, (long) i * len, len));
            }
            assertEquals(n, batch.size());
            assertEquals((long) n * len, batch.run().throwIfFailed().totalBytes());
            for (int i = 0; i < n; i++) {
                Fixtures.assertBytes(data, (n - 1 - i) * len, Fixtures.contents(host, (long) i * len, len), "request " + i);
            }
            batch.clear();
            int grown = batch.capacity();
            batch.add(IoRequest.read(f, 0, host, 0, len));
            assertEquals(grown, batch.capacity(), "a cleared batch keeps its array");
        }
    }

    /** The deprecated pread-order method still means what it always did. */
    @Test
    @SuppressWarnings("deprecation")
    void deprecatedReadKeepsPreadOrder() throws IOException {
        byte[] data = Fixtures.random(10_000, 8);
        Path p = Fixtures.writeFile(dir, "old.bin", data);
        try (PhxFile f = PhxFile.open(p, OpenMode.READ);
             RegisteredBuffer host = PHX.host().allocate(10_000);
             IoBatch batch = IoBatch.create()) {
            // (file, buf, bufOffset, nbytes, fileOffset)
            assertEquals(300, batch.read(f, host, 100, 300, 5_000).run().throwIfFailed().totalBytes());
            Fixtures.assertBytes(data, 5_000, Fixtures.contents(host, 100, 300), "old order");
        }
    }

    @Test
    void concurrentBatchesFromSeveralThreads() throws Exception {
        int fileSize = 8 << 20;
        byte[] data = Fixtures.random(fileSize, 31);
        Path p = Fixtures.writeFile(dir, "shared.bin", data);
        int threads = 4;
        int rounds = 6;
        int perBatch = 8;
        int len = 300_001;
        try (PhxFile f = PhxFile.open(p)) {
            java.util.List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
            try (java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads)) {
                for (int t = 0; t < threads; t++) {
                    int seed = t;
                    done.add(pool.submit(() -> {
                        java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
                        try (RegisteredBuffer host = PHX.host().allocate((long) perBatch * len);
                             RegisteredBuffer dev = dev0().allocate((long) perBatch * len);
                             IoBatch batch = IoBatch.create(perBatch)) {
                            for (int r = 0; r < rounds; r++) {
                                batch.clear();
                                long[] offsets = new long[perBatch];
                                for (int i = 0; i < perBatch; i++) {
                                    offsets[i] = rnd.nextLong(fileSize - len);
                                    batch.add(IoRequest.read(f, offsets[i], i % 2 == 0 ? host : dev, (long) i * len, len));
                                }
                                BatchResult res = (r % 2 == 0 ? batch.run() : batch.submit().get(60, TimeUnit.SECONDS))
                                        .throwIfFailed();
                                assertEquals((long) perBatch * len, res.totalBytes());
                                for (int i = 0; i < perBatch; i++) {
                                    Fixtures.assertBytes(data, (int) offsets[i],
                                            Fixtures.contents(i % 2 == 0 ? host : dev, (long) i * len, len),
                                            "thread " + seed + " round " + r + " request " + i);
                                }
                            }
                        }
                        return null;
                    }));
                }
            }
            for (java.util.concurrent.Future<?> d : done) {
                d.get();
            }
        }
    }

    @Test
    void closingABufferWhileABatchUsesItIsRefusedNeverACrash() throws Exception {
        int chunk = 1 << 20;
        int n = 48;
        byte[] data = Fixtures.random(n * chunk, 8);
        Path p = Fixtures.writeFile(dir, "big.bin", data);
        for (RegisteredBuffer buf : new RegisteredBuffer[] {dev0().allocate((long) n * chunk),
                PHX.host().allocate((long) n * chunk)}) {
            PhxFile f = PhxFile.open(p);
            IoBatch batch = IoBatch.create(n);
            for (int i = 0; i < n; i++) {
                batch.add(IoRequest.read(f, (long) (n - 1 - i) * chunk, buf, (long) i * chunk, chunk));
            }
            CompletableFuture<BatchResult> future = batch.submit();
            boolean closedEarly;
            try {
                buf.close();
                closedEarly = true;
            } catch (PhoenixException e) {
                assertEquals(Errno.EBUSY, e.errno(), e.getMessage());
                closedEarly = false;
            }
            if (!closedEarly) {
                try {
                    f.close(); // only possible once the batch has let go of it
                } catch (PhoenixException e) {
                    assertEquals(Errno.EBUSY, e.errno(), e.getMessage());
                }
            }
            batch.close(); // deferred until the batch completes
            BatchResult r = future.get(60, TimeUnit.SECONDS);
            assertEquals(0, r.failed(), r.toString());
            if (!closedEarly) {
                for (int i = 0; i < n; i += 7) {
                    Fixtures.assertBytes(data, (n - 1 - i) * chunk, Fixtures.contents(buf, (long) i * chunk, 4096),
                            "chunk " + i);
                }
                buf.close();
            }
            assertTrue(buf.isClosed());
            f.close();
            assertThrows(IllegalStateException.class, batch::run);
        }
    }
}
