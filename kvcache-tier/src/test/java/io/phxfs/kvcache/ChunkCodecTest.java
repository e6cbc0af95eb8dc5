package io.phxfs.kvcache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The codec declares its sizes exact, so Lettuce writes each bulk length before the bytes and
 * trusts it: a size that were off by one byte would desynchronise the connection. Keys with
 * multi-byte UTF-8 characters, entries of header plus payload and plain byte[] values go through
 * a real server, several pipelined on one connection, and come back byte for byte.
 */
class ChunkCodecTest {
    @RegisterExtension
    static final RedisServer REDIS = new RedisServer();

    @Test
    void exactSizesRoundTripThroughARealServer() throws Exception {
        RedisClient client = RedisClient.create(REDIS.url());
        try (StatefulRedisConnection<String, Object> c = client.connect(new ChunkCodec(), io.lettuce.core.RedisURI.create(REDIS.url()));
             Arena arena = Arena.ofShared()) {
            Random rnd = new Random(7);
            List<String> keys = List.of("codec-ascii", "codec-ключ-ü-€-𝄞", "codec-" + "é".repeat(300));
            int[] payloadLens = {0, 1, 4095, 3 << 20};
            List<byte[]> want = new ArrayList<>();
            List<String> at = new ArrayList<>();
            var async = c.async();
            List<io.lettuce.core.RedisFuture<String>> sets = new ArrayList<>();
            for (String k : keys) {
                for (int len : payloadLens) {
                    byte[] header = new byte[ChunkFileHeader.SIZE];
                    rnd.nextBytes(header);
                    MemorySegment payload = arena.allocate(Math.max(1, len)).asSlice(0, len);
                    byte[] p = new byte[len];
                    rnd.nextBytes(p);
                    MemorySegment.copy(p, 0, payload, ValueLayout.JAVA_BYTE, 0, len);
                    byte[] whole = new byte[header.length + len];
                    System.arraycopy(header, 0, whole, 0, header.length);
                    System.arraycopy(p, 0, whole, header.length, len);
                    String key = k + "-" + len;
                    sets.add(async.set(key, new ChunkCodec.Value(header, payload)));
                    want.add(whole);
                    at.add(key);
                    byte[] plain = new byte[len / 2 + 3];
                    rnd.nextBytes(plain);
                    sets.add(async.set(key + "-bytes", plain));
                    want.add(plain);
                    at.add(key + "-bytes");
                }
            }
            for (var f : sets) {
                assertEquals("OK", f.get());
            }
            for (int i = 0; i < at.size(); i++) {
                assertArrayEquals(want.get(i), (byte[]) c.sync().get(at.get(i)), at.get(i));
                assertEquals(want.get(i).length, c.sync().strlen(at.get(i)), at.get(i));
            }
            // the keys arrived as their UTF-8 bytes, not truncated or padded
            assertEquals(keys.size() * payloadLens.length * 2L, c.sync().keys("codec-*").size());
            assertEquals(1L, c.sync().exists("codec-ключ-ü-€-𝄞-1"));
            assertEquals("codec-ключ-ü-€-𝄞-1".getBytes(StandardCharsets.UTF_8).length,
                    c.sync().keys("codec-ключ*-1").getFirst().getBytes(StandardCharsets.UTF_8).length);
        } finally {
            client.shutdown();
        }
    }
}
