package io.phxfs.safetensors;

import io.phxfs.core.Device;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import io.phxfs.safetensors.LoadBatch.Read;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * {@link WeightLoader.Builder#replicate}: one buffer per device with the same layout; device k
 * reads the k-th run of requests (about 1/N of the bytes, one contiguous range of the buffer),
 * then each device copies the other devices' ranges from them.
 */
final class ReplicatedLoad {
    /** Distinct device ids; the first one's plan is every device's. */
    private final List<Integer> devices;
    private final ReadRunner runner;

    ReplicatedLoad(List<Integer> devices, ReadRunner runner) {
        this.devices = devices;
        this.runner = runner;
    }

    /** Loads {@code plan} (the first device's) onto every device; times as for any load. */
    LoadedModel load(ModelFiles model, ReadPlan plan, long t0, long locateNanos, long planNanos) {
        long tPlanEnd = System.nanoTime();
        Phoenix phx = Phoenix.open();
        int n = devices.size();
        List<Device> devs = new ArrayList<>(n);
        SortedMap<Integer, RegisteredBuffer> buffers = new TreeMap<>();
        List<AutoCloseable> owned = new ArrayList<>();
        try {
            for (int id : devices) {
                devs.add(phx.device(id));
            }
            int primary = devices.get(0);
            Long size = plan.bufferBytes().get(primary);
            boolean cover = size != null && PlacedLoad.readsCover(plan, primary, size);
            if (size != null) {
                for (int k = 0; k < n; k++) {
                    RegisteredBuffer b = cover ? devs.get(k).allocateUninitialized(size) : devs.get(k).allocate(size);
                    owned.add(b);
                    buffers.put(devices.get(k), b);
                }
            }
            long tRead = System.nanoTime();
            List<ReadPlan.ReadRequest> requests = plan.requests().stream()
                    .sorted(Comparator.comparingLong(ReadPlan.ReadRequest::bufferOffset)).toList();
            long total = requests.stream().mapToLong(ReadPlan.ReadRequest::length).sum();
            long[] lo = new long[n];
            long[] hi = new long[n];
            Arrays.fill(lo, Long.MAX_VALUE);
            List<Read> reads = new ArrayList<>(requests.size());
            long before = 0;
            for (ReadPlan.ReadRequest r : requests) {
                // by the request's middle byte: shares are runs of requests, about total/N bytes each
                int k = (int) Math.min(n - 1, (long) ((before + r.length() / 2.0) / total * n));
                reads.add(new Read(r.file().file(), buffers.get(devices.get(k)), r.bufferOffset(), r.fileOffset(),
                        r.length(), r.neededLength(), cover));
                lo[k] = Math.min(lo[k], r.bufferOffset());
                hi[k] = Math.max(hi[k], r.bufferOffset() + r.length());
                before += r.length();
            }
            runner.readAll(reads, f -> false, 0);
            copyShares(devs, buffers, lo, hi);
            long tViews = System.nanoTime();
            Map<Integer, Map<String, LoadedTensor>> replicas = new LinkedHashMap<>();
            for (int k = 0; k < n; k++) {
                int id = devices.get(k);
                Map<String, LoadedTensor> m = new LinkedHashMap<>();
                for (ReadPlan.PlannedTensor p : plan.tensors().values()) {
                    m.put(p.name(), new LoadedTensor(p.info(), p.file().file(), id, p.bufferOffset(), buffers.get(id),
                            devs.get(k), LoadedTensor.Memory.SHARED));
                }
                replicas.put(id, m);
            }
            long tEnd = System.nanoTime();
            return new LoadedModel(model, plan, buffers, owned, replicas.get(primary), replicas, tEnd - t0,
                    LoadedModel.Phases.sequential(t0, locateNanos, tPlanEnd - planNanos, planNanos, tRead, tViews, tEnd));
        } catch (RuntimeException | Error e) {
            Cleanup.closeAll(owned, e);
            throw e;
        }
    }

    /**
     * Every device pulls the ranges the others read, all devices at once (one thread each):
     * over peer links these copies run in parallel; through host memory each uses the source
     * device's pinned pool.
     */
    private void copyShares(List<Device> devs, Map<Integer, RegisteredBuffer> buffers, long[] lo, long[] hi) {
        int n = devs.size();
        if (n == 1 || buffers.isEmpty()) {
            return;
        }
        List<Thread> threads = new ArrayList<>(n);
        Throwable[] failures = new Throwable[n];
        for (int j = 0; j < n; j++) {
            int dst = j;
            threads.add(Thread.ofPlatform().name("phoenix-replicate-" + devices.get(j)).start(() -> {
                try {
                    Device d = devs.get(dst);
                    RegisteredBuffer into = buffers.get(devices.get(dst));
                    for (int i = 1; i < n; i++) {
                        int src = (dst + i) % n; // staggered, so that no source is every device's first
                        if (hi[src] > lo[src]) {
                            d.copyFromDevice(buffers.get(devices.get(src)), lo[src], into, lo[src], hi[src] - lo[src]);
                        }
                    }
                } catch (Throwable t) {
                    failures[dst] = t;
                }
            }));
        }
        boolean interrupted = false;
        for (Thread t : threads) {
            while (true) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // the copies write into our buffers: they must finish first
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        RuntimeException first = null;
        for (Throwable t : failures) {
            if (t == null) {
                continue;
            }
            if (first == null) {
                first = t instanceof RuntimeException re ? re : new IllegalStateException(t);
            } else {
                first.addSuppressed(t);
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
