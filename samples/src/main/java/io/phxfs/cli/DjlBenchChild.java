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
import java.util.Locale;

/** One path of {@code djl-load-bench} in its own JVM (apart from the command: see {@link DjlRun}). */
final class DjlBenchChild {
    private DjlBenchChild() {
    }

    /** One path in this JVM: "result SECONDS RSS_START PEAK_RSS TENSORS CHECKSUM". */
    static String run(String path, Path file) throws IOException {
        DjlRuntime.preferOffline();
        DjlRuntime.pytorch();
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
                throw new IllegalArgumentException("--child " + path + ": phoenix, phoenix-shared or decode");
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
}
