package io.phxfs.cli;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import io.phxfs.djl.DjlRuntime;
import io.phxfs.djl.SafetensorsNDList;
import io.phxfs.djl.TensorViews;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** One path of {@code djl-load-bench} in its own JVM (apart from the command: see {@link DjlRun}). */
final class DjlBenchChild {
    private DjlBenchChild() {
    }

    /** One path in this JVM: "result SECONDS RSS_START PEAK_RSS TENSORS CHECKSUM". */
    static String run(String path, Path file) throws IOException {
        DjlRuntime.preferOffline();
        DjlRuntime.pytorch();
        if (path.endsWith("-gpu")) {
            return toGpu(path, file);
        }
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
            m.zeros(new ai.djl.ndarray.types.Shape(1)).close(); // engine and allocator up before the clock
            System.gc();
            long start = ProcStatus.rss();
            long t0 = System.nanoTime();
            NDList list;
            if (path.equals("phoenix")) {
                list = SafetensorsNDList.load(file, m);
            } else if (path.equals("phoenix-shared")) {
                // the loader's own writable host load: one huge-page buffer for every tensor
                list = SafetensorsNDList.load(file, m, io.phxfs.safetensors.WeightLoader.builder().writable(true).build());
            } else if (path.equals("decode")) {
                try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 20)) {
                    list = NDList.decode(m, in);
                }
            } else {
                throw new IllegalArgumentException("--child " + path + ": phoenix, phoenix-shared, decode, phoenix-gpu or decode-gpu");
            }
            double sec = (System.nanoTime() - t0) / 1e9;
            long hwm = ProcStatus.peakRss();
            long sum = 0;
            for (NDArray a : list) {
                MemorySegment s = TensorViews.bytes(a, a.getDataType().getNumOfBytes());
                for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
                    sum = sum * 31 + s.get(ValueLayout.JAVA_LONG_UNALIGNED, i);
                }
            }
            return String.format(Locale.ROOT, "result %.4f %d %d %d %016x", sec, start, hwm, list.size(), sum);
        }
    }

    /**
     * A checkpoint (a file, or every .safetensors of a directory) into GPU 0's memory, by
     * Phoenix (straight into device memory) or by DJL's own route (NDList.decode into host
     * memory, then toDevice): "result SECONDS RSS_START PEAK_RSS TENSORS BYTES". DJL's decode
     * takes files under 2 GiB of F32/F16/integer tensors (a bf16 tensor ends its JVM).
     */
    private static String toGpu(String path, Path file) throws IOException {
        List<Path> files;
        if (Files.isDirectory(file)) {
            try (java.util.stream.Stream<Path> s = Files.list(file)) {
                files = s.filter(p -> p.toString().endsWith(".safetensors")).sorted().toList();
            }
        } else {
            files = List.of(file);
        }
        Device gpu = Device.gpu(0);
        try (NDManager m = NDManager.newBaseManager(gpu, DjlRuntime.ENGINE);
             NDManager host = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
            m.zeros(new ai.djl.ndarray.types.Shape(1)).close(); // CUDA context up before the clock
            System.gc();
            long start = ProcStatus.rss();
            long t0 = System.nanoTime();
            long tensors = 0;
            long bytes = 0;
            double loadedAt = -1; // the weights close before the result line: their load alone is timed
            if (path.equals("phoenix-gpu")) {
                try (io.phxfs.djl.PhoenixWeights w = io.phxfs.djl.PhoenixWeights.load(file, m,
                        io.phxfs.safetensors.WeightLoader.builder().toDevice(0).build())) {
                    loadedAt = (System.nanoTime() - t0) / 1e9;
                    tensors = w.arrays().size();
                    for (io.phxfs.safetensors.LoadedTensor t : w.loaded().tensors().values()) {
                        bytes += t.nbytes();
                    }
                }
            } else if (path.equals("decode-gpu")) {
                for (Path f : files) {
                    NDList list;
                    try (InputStream in = new BufferedInputStream(Files.newInputStream(f), 1 << 20)) {
                        list = NDList.decode(host, in);
                    }
                    for (NDArray a : list) {
                        NDArray d = a.toDevice(gpu, false);
                        d.attach(m);
                        bytes += a.size() * a.getDataType().getNumOfBytes();
                        a.close();
                        tensors++;
                    }
                }
            } else {
                throw new IllegalArgumentException("--child " + path + ": phoenix-gpu or decode-gpu");
            }
            double sec = loadedAt >= 0 ? loadedAt : (System.nanoTime() - t0) / 1e9;
            return String.format(Locale.ROOT, "result %.4f %d %d %d %d", sec, start, ProcStatus.peakRss(), tensors, bytes);
        }
    }
}
