package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.SafetensorsWriter;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SafetensorsNDList against DJL's own NDList.decode, where decode can take the file, and beyond. */
class SafetensorsNDListTest {
    static {
        DjlRuntime.pytorch();
    }

    private static Map<String, float[]> byName(NDList list) {
        Map<String, float[]> m = new TreeMap<>();
        for (NDArray a : list) {
            m.put(a.getName(), a.toFloatArray());
        }
        return m;
    }

    @Test
    void sameNamesAndValuesAsNdListDecodeSingleAndSharded() throws Exception {
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
            NDList decoded;
            try (InputStream in = Files.newInputStream(TestFixtures.file("tiny-gpt2/model.safetensors"))) {
                decoded = NDList.decode(m, in);
            }
            Map<String, float[]> want = byName(decoded);
            assertEquals(28, want.size());
            for (String src : new String[] {"tiny-gpt2/model.safetensors", "tiny-gpt2", "tiny-gpt2-sharded"}) {
                Map<String, float[]> got = byName(SafetensorsNDList.load(TestFixtures.file(src), m));
                assertEquals(want.keySet(), got.keySet(), src);
                for (String n : want.keySet()) {
                    assertArrayEquals(want.get(n), got.get(n), src + " " + n);
                }
            }
        }
    }

    @Test
    void bf16AndFp8LoadWhereDecodeWouldEndTheJvm() throws Exception {
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
            NDList l = SafetensorsNDList.load(TestFixtures.file("dtypes.safetensors"), m);
            assertEquals(17, l.size());
            Map<String, NDArray> byName = new TreeMap<>();
            l.forEach(a -> byName.put(a.getName(), a));
            assertEquals("bfloat16", TensorViews.torchDtype(byName.get("bf16")));
            assertEquals("float8_e4m3fn", TensorViews.torchDtype(byName.get("f8_e4m3")));
            assertEquals(64, TensorViews.toFloat32(byName.get("f8_e4m3")).size());
        }
    }

    @Test
    void aClosedManagerReleasesTheMemory() throws Exception {
        NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
        PhoenixWeights w = SafetensorsNDList.loadWeights(TestFixtures.file("tiny-gpt2"), m);
        NDArray a = w.toNDList().head();
        m.close();
        assertEquals(1, w.releaseCount());
        assertThrows(IllegalStateException.class, a::toFloatArray);
        assertThrows(IllegalStateException.class, w::toNDList);
    }

    /**
     * A file over 2 GiB whose first tensor has more than 2^31 bytes and elements, past both of
     * DJL's caps (int element counts, 2 GiB ByteBuffers): sparse on disk, so the test costs the
     * load's copy into memory only.
     */
    @Test
    void tensorsOver2GiBLoadThroughTheShim(@TempDir Path dir) throws Exception {
        long big = (1L << 31) + 8;
        List<SafetensorsWriter.Spec> specs = List.of(new SafetensorsWriter.Spec("big", Dtype.U8, new long[] {big}),
                new SafetensorsWriter.Spec("after", Dtype.F32, new long[] {4}));
        byte[] header = SafetensorsWriter.header(Map.of(), specs);
        Path f = dir.resolve("big.safetensors");
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(header), 0);
            ch.write(ByteBuffer.wrap(new byte[] {11, 22}), header.length);
            ch.write(ByteBuffer.wrap(new byte[] {33, 44}), header.length + big - 2);
            ByteBuffer after = ByteBuffer.allocate(16).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            after.putFloat(1).putFloat(2).putFloat(3).putFloat(4).flip();
            ch.write(after, header.length + big);
        }
        assertTrue(Files.size(f) > (1L << 31));
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE);
             PhoenixWeights w = SafetensorsNDList.loadWeights(f, m)) {
            NDArray a = w.get("big");
            assertArrayEquals(new long[] {big}, TensorViews.shape(a));
            assertEquals(w.loaded().tensor("big").orElseThrow().address(), TensorViews.dataPointer(a));
            MemorySegment bytes = TensorViews.bytes(a, 1);
            assertEquals(big, bytes.byteSize());
            assertEquals(11, bytes.get(ValueLayout.JAVA_BYTE, 0));
            assertEquals(22, bytes.get(ValueLayout.JAVA_BYTE, 1));
            assertEquals(0, bytes.get(ValueLayout.JAVA_BYTE, 1L << 30));
            assertEquals(33, bytes.get(ValueLayout.JAVA_BYTE, big - 2));
            assertEquals(44, bytes.get(ValueLayout.JAVA_BYTE, big - 1));
            assertArrayEquals(new float[] {1, 2, 3, 4}, w.get("after").toFloatArray());
        }
    }
}
