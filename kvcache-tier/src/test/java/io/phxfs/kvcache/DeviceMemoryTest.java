package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.phxfs.core.Device;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Device memory as source and destination. Run twice by the build: with the machine's connector
 * and with the fake connector, whose device memory Java cannot touch, so that every device path
 * goes through Phoenix copies as on a GPU.
 */
class DeviceMemoryTest {
    @TempDir
    Path tmp;

    private static List<RegisteredBuffer> onDevice(Device d, List<byte[]> data, boolean copy) {
        List<RegisteredBuffer> out = new ArrayList<>();
        for (byte[] b : data) {
            RegisteredBuffer r = d.allocate(b.length);
            if (copy) {
                d.copyToDevice(MemorySegment.ofArray(b), r, 0);
            }
            out.add(r);
        }
        return out;
    }

    @Test
    void realKvCacheFromAndIntoDeviceTensors() throws Exception {
        Device d = TestData.PHX.device(0);
        TestData.KvFixture kv = TestData.kv600();
        for (boolean memory : new boolean[] {true, false}) {
            KvCacheConfig c = KvCacheConfig.builder().saveUnfullChunk(true).localCpu(memory).maxLocalCpuBytes(1 << 20)
                    .localDisk(tmp.resolve("disk-" + memory)).diskMinFreeBytes(0).model("dev").build();
            List<RegisteredBuffer> k = onDevice(d, kv.keys(), true);
            List<RegisteredBuffer> v = onDevice(d, kv.values(), true);
            List<RegisteredBuffer> k2 = onDevice(d, kv.keys(), false);
            List<RegisteredBuffer> v2 = onDevice(d, kv.values(), false);
            try (KvCacheEngine e = new KvCacheEngine(c, kv.layout())) {
                assertEquals(600, e.storeAsync(kv.tokens(), KvTensors.of(kv.layout(), k, v, 1, 0, 600)).get());
                assertEquals(600, e.retrieve(kv.tokens(), KvTensors.of(kv.layout(), k2, v2, 1, 0, 600)));
                for (int l = 0; l < kv.layout().layers(); l++) {
                    assertArrayEquals(kv.keys().get(l), TestData.bytes(k2.get(l)), d + " keys " + l);
                    assertArrayEquals(kv.values().get(l), TestData.bytes(v2.get(l)), d + " values " + l);
                }
            } finally {
                for (List<RegisteredBuffer> l : List.of(k, v, k2, v2)) {
                    TestData.closeAll(l);
                }
            }
        }
    }

    @Test
    void chunkedDeviceBufferRoundTripsThroughDisk() {
        Device d = TestData.PHX.device(0);
        KvLayout l = KvLayout.preset("tiny-llama");
        int tokens = 4 * 256;
        long len = l.bytesPerChunk(tokens);
        byte[] data = new byte[(int) len];
        TestData.fill(MemorySegment.ofArray(data), 99);
        KvCacheConfig c = KvCacheConfig.builder().localCpu(false).localDisk(tmp.resolve("chunked")).diskMinFreeBytes(0)
                .build();
        try (KvCacheEngine e = new KvCacheEngine(c, l);
             RegisteredBuffer src = d.allocate(len);
             RegisteredBuffer dst = d.allocate(len)) {
            d.copyToDevice(MemorySegment.ofArray(data), src, 0);
            int[] p = TestData.tokens(tokens, 3);
            assertEquals(tokens, e.store(p, new ChunkedKv(src, l, 256)));
            assertEquals(tokens, e.retrieve(p, new ChunkedKv(dst, l, 256)));
            byte[] got = TestData.bytes(dst);
            assertArrayEquals(data, got, d.toString());
            assertEquals(0, got.length % ValueLayout.JAVA_BYTE.byteSize());
        }
    }
}
