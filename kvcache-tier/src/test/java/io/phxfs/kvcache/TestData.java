package io.phxfs.kvcache;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.core.Phoenix;
import io.phxfs.core.RegisteredBuffer;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Fixtures (testdata/, as the loader's tests find them) and deterministic chunk contents. */
final class TestData {
    static final Phoenix PHX = Phoenix.open();

    private TestData() {
    }

    /** testdata/fixtures: -Dphx.fixtures, then the fallback the pom sets, then upwards from the working directory. */
    static Path fixtures() {
        List<Path> tried = new ArrayList<>();
        for (String prop : new String[] {"phx.fixtures", "phx.fixtures.fallback"}) {
            String v = System.getProperty(prop);
            if (v != null) {
                Path p = Path.of(v);
                tried.add(p);
                if (Files.isDirectory(p.resolve("tiny-llama"))) {
                    return p;
                }
            }
        }
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            Path p = d.resolve("testdata/fixtures");
            tried.add(p);
            if (Files.isDirectory(p.resolve("tiny-llama"))) {
                return p;
            }
        }
        throw new IllegalStateException("testdata/fixtures not found; tried " + tried);
    }

    /** The real KV cache of tiny-llama for a 600-token prompt: host tensors and the prompt's tokens. */
    record KvFixture(int[] tokens, List<byte[]> keys, List<byte[]> values, KvLayout layout, int batch, int seq) {
    }

    static KvFixture kv600() throws IOException {
        Path file = fixtures().resolve("tiny-llama/kv_600_tokens.safetensors");
        byte[] all = Files.readAllBytes(file);
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        int n = (int) b.getLong(0);
        JsonNode h = new ObjectMapper().readTree(new String(all, 8, n, java.nio.charset.StandardCharsets.UTF_8));
        int base = 8 + n;
        JsonNode ids = h.get("input_ids");
        long s0 = ids.get("data_offsets").get(0).asLong();
        int seq = ids.get("shape").get(1).asInt();
        int[] tokens = new int[seq];
        for (int i = 0; i < seq; i++) {
            tokens[i] = (int) b.getLong(base + (int) s0 + i * 8);
        }
        List<byte[]> keys = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        int layers = 0;
        JsonNode shape = null;
        while (h.has("layer." + layers + ".key")) {
            for (String kv : new String[] {"key", "value"}) {
                JsonNode t = h.get("layer." + layers + "." + kv);
                shape = t.get("shape");
                long a = t.get("data_offsets").get(0).asLong();
                long z = t.get("data_offsets").get(1).asLong();
                byte[] data = java.util.Arrays.copyOfRange(all, base + (int) a, base + (int) z);
                (kv.equals("key") ? keys : values).add(data);
            }
            layers++;
        }
        KvLayout layout = new KvLayout(layers, shape.get(1).asInt(), shape.get(3).asInt(), KvLayout.DType.BFLOAT16,
                KvLayout.Kind.KV_2LTD);
        return new KvFixture(tokens, keys, values, layout, shape.get(0).asInt(), shape.get(2).asInt());
    }

    /** Host buffers holding {@code data}. */
    static List<RegisteredBuffer> host(List<byte[]> data) {
        List<RegisteredBuffer> out = new ArrayList<>();
        for (byte[] d : data) {
            RegisteredBuffer r = PHX.host().allocate(d.length);
            MemorySegment.copy(d, 0, r.segment().orElseThrow(), ValueLayout.JAVA_BYTE, 0, d.length);
            out.add(r);
        }
        return out;
    }

    static List<RegisteredBuffer> zeroedHost(List<byte[]> like) {
        List<RegisteredBuffer> out = new ArrayList<>();
        for (byte[] d : like) {
            out.add(PHX.host().allocate(d.length));
        }
        return out;
    }

    static byte[] bytes(RegisteredBuffer buf) {
        byte[] out = new byte[(int) buf.size()];
        if (buf.segment().isPresent()) {
            MemorySegment.copy(buf.segment().get(), ValueLayout.JAVA_BYTE, 0, out, 0, out.length);
        } else {
            PHX.device(buf.deviceId()).copyToHost(buf, 0, MemorySegment.ofArray(out));
        }
        return out;
    }

    static void closeAll(List<RegisteredBuffer> bufs) {
        bufs.forEach(RegisteredBuffer::close);
    }

    /** Token ids of a prompt whose chunk {@code i} is determined by {@code chunkSeeds[i]} and its predecessors. */
    static int[] tokens(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = r.nextInt(128_000);
        }
        return t;
    }

    /** Bytes determined by a seed: a chunk's expected content, checked after any retrieve. */
    static void fill(MemorySegment seg, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = seg.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        for (; i < n; i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    /** The seed of a chunk: its chained hash, so that every prompt sharing the prefix expects the same bytes. */
    static long seedOf(int[] tokens, int chunk, int chunkSize) {
        byte[][] h = new ChunkHasher(chunkSize, null).hashes(tokens, chunk + 1);
        return ByteBuffer.wrap(h[chunk]).getLong();
    }
}
