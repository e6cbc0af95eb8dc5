package io.phxfs.serving.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.phxfs.kvcache.KvCacheConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The engine against transformers' greedy generate (reference.json of the tiny-chat fixtures),
 * alone and in a batch, with and without the prefix cache in each tier, and its limits.
 */
class GenerationEngineTest {
    @TempDir
    Path tmp;

    private static int counter;

    private static GenerationRequest greedy(int[] ids, int max) {
        return new GenerationRequest("t" + counter++, ids, SamplingParams.greedy(max), null);
    }

    private static Collector.Result run(GenerationEngine e, GenerationRequest r) throws Exception {
        Collector c = new Collector();
        e.submit(r, c);
        return c.await();
    }

    /** Every valid chat and completion of the reference, as transformers generated them. */
    private static List<JsonNode> cases(JsonNode ref) {
        List<JsonNode> out = new ArrayList<>();
        ref.get("chats").forEach(c -> {
            if (c.has("ids")) {
                out.add(c);
            }
        });
        ref.get("completions").forEach(out::add);
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-chat-llama", "tiny-chat-gpt2"})
    void greedyTokensAndTextEqualTransformersAloneAndAllAtOnce(String fixture) throws Exception {
        JsonNode ref = Fixtures.reference(fixture);
        int max = ref.get("max_new_tokens").intValue();
        List<JsonNode> cases = cases(ref);
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir(fixture)))) {
            for (JsonNode c : cases) {
                Collector.Result r = run(e, greedy(Fixtures.ints(c.get("ids")), max));
                assertArrayEquals(Fixtures.ints(c.get("generated")), r.tokens(), fixture + ": " + c.get("ids").size() + " tokens");
                assertEquals(c.get("generated_text").asText(), r.text(), fixture);
                assertEquals(String.join("", r.pieces()), r.text());
                assertEquals(new Usage(c.get("ids").size(), max, 0), r.usage());
                assertEquals(FinishReason.LENGTH, r.reason());
            }
            // all together: the batch is decoded as one, and each stays exact
            List<Collector> cs = new ArrayList<>();
            for (JsonNode c : cases) {
                Collector col = new Collector();
                e.submit(greedy(Fixtures.ints(c.get("ids")), max), col);
                cs.add(col);
            }
            for (int i = 0; i < cases.size(); i++) {
                assertArrayEquals(Fixtures.ints(cases.get(i).get("generated")), cs.get(i).await().tokens(),
                        fixture + " in a batch of " + cases.size() + ", case " + i);
            }
        }
    }

    /**
     * The Llama family's members and Gemma (transformers' logits and greedy tokens in expected_logits.json,
     * scripts/gpu/families_reference.py and gemma_reference.py) through the engine: prefill, batched decode and its KV
     * cache, alone and all at once. The fixtures have no tokenizer of their own (the engine needs
     * one for text), so tiny-chat-llama's is put beside each: its ids cover their vocabularies.
     */
    @Test
    void llamaFamilyMembersGiveTransformersGreedyTokensAloneAndAllAtOnce() throws Exception {
        String[] fixtures = {"tiny-llama3", "tiny-llama-bias", "tiny-llama-linear", "tiny-qwen2", "tiny-qwen3", "tiny-mistral",
            "tiny-qwen2-yarn", "tiny-phi3", "tiny-phi3-longrope", "tiny-gemma", "tiny-gemma2", "tiny-gemma3"};
        for (String f : fixtures) {
            Path dir = tmp.resolve(f);
            Files.createDirectories(dir);
            try (Stream<Path> s = Files.list(Fixtures.dir(f))) {
                for (Path file : (Iterable<Path>) s::iterator) {
                    Files.copy(file, dir.resolve(file.getFileName()));
                }
            }
            Files.copy(Fixtures.dir("tiny-chat-llama").resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
            JsonNode ref = new com.fasterxml.jackson.databind.ObjectMapper().readTree(dir.resolve("expected_logits.json").toFile());
            int[] ids = Fixtures.ints(ref.get("input_ids").get(0));
            int[] want = Fixtures.ints(ref.get("generate_8_greedy"));
            try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(dir))) {
                assertArrayEquals(want, run(e, new GenerationRequest("t" + counter++, ids,
                        new SamplingParams(0, 1, 0, null, 8, List.of(), true), null)).tokens(), f);
                List<Collector> cs = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    Collector col = new Collector();
                    e.submit(new GenerationRequest("t" + counter++, ids, new SamplingParams(0, 1, 0, null, 8, List.of(), true), null), col);
                    cs.add(col);
                }
                for (Collector col : cs) {
                    assertArrayEquals(want, col.await().tokens(), f + " in a batch of 3");
                }
            }
        }
    }

    private KvCacheConfig memoryTier() {
        return KvCacheConfig.builder().localCpu(true).maxLocalCpuBytes(64L << 20).build();
    }

    private KvCacheConfig diskTier(Path dir) {
        return KvCacheConfig.builder().localCpu(false).localDisk(dir).maxLocalDiskBytes(256L << 20).diskMinFreeBytes(0).build();
    }

    /** The reference's longest prompt: several 256-token chunks. */
    private static JsonNode longest(JsonNode ref) {
        return cases(ref).stream().max(java.util.Comparator.comparingInt(c -> c.get("ids").size())).orElseThrow();
    }

    @Test
    void aMemoryTierHitGivesTheSameTokensAndSaysHowManyWereCached() throws Exception {
        JsonNode ref = Fixtures.reference("tiny-chat-llama");
        JsonNode c = longest(ref);
        int[] ids = Fixtures.ints(c.get("ids"));
        int max = ref.get("max_new_tokens").intValue();
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama")).withKvCache(memoryTier()))) {
            Collector.Result miss = run(e, greedy(ids, max));
            assertEquals(0, miss.usage().cachedTokens());
            Collector.Result hit = run(e, greedy(ids, max));
            assertEquals((ids.length - 1) / 256 * 256, hit.usage().cachedTokens(), "whole chunks, the last token left to the prefill");
            assertTrue(hit.usage().cachedTokens() >= 1024, "a prompt of " + ids.length + " tokens");
            assertArrayEquals(Fixtures.ints(c.get("generated")), hit.tokens());
            assertArrayEquals(miss.tokens(), hit.tokens());
            // a salt is another tenant: nothing shared
            Collector.Result salted = run(e, new GenerationRequest("s", ids, SamplingParams.greedy(max), "tenant-b"));
            assertEquals(0, salted.usage().cachedTokens());
            assertArrayEquals(miss.tokens(), salted.tokens());
            assertEquals((ids.length - 1) / 256 * 256,
                    run(e, new GenerationRequest("s2", ids, SamplingParams.greedy(max), "tenant-b")).usage().cachedTokens());
            // a prompt that shares only the first chunk reuses that chunk
            int[] forked = ids.clone();
            forked[300] = (forked[300] + 1) % 1000;
            Collector.Result part = run(e, greedy(forked, max));
            assertEquals(256, part.usage().cachedTokens());
            assertTrue(e.tierMetrics().orElseThrow().retrievedTokens() > 0);
        }
    }

    /** {@code n} token ids of the reference's longest prompt from {@code from} on, reversed: valid ids, another text. */
    private static int[] suffix(int[] ids, int from, int n) {
        int[] s = new int[n];
        for (int i = 0; i < n; i++) {
            s[i] = ids[ids.length - 1 - from - i];
        }
        return s;
    }

    private static int[] join(int[] a, int[] b) {
        int[] c = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-chat-llama", "tiny-chat-gpt2"})
    void concurrentRequestsOverACachedPrefixShareOneBlockAndStayExact(String fixture) throws Exception {
        JsonNode ref = Fixtures.reference(fixture);
        int[] ids = Fixtures.ints(longest(ref).get("ids"));
        int[] common = java.util.Arrays.copyOf(ids, 512);
        // suffixes: short, one that crosses into a new chunk (its third chunk is stored from
        // the request's own buffers), and one long enough for two prefill pieces
        int[][] prompts = {join(common, suffix(ids, 0, 20)), join(common, suffix(ids, 40, 300)), join(common, suffix(ids, 7, 3)),
                join(common, suffix(ids, 90, 530))};
        int max = 8;
        List<int[]> expected = new ArrayList<>();
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir(fixture)))) {
            for (int[] p : prompts) {
                expected.add(run(e, greedy(p, max)).tokens());
            }
        }
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir(fixture)).withKvCache(memoryTier()))) {
            // the prefix into the tier
            assertEquals(0, run(e, greedy(join(common, suffix(ids, 200, 9)), max)).usage().cachedTokens());
            List<Collector> cs = new ArrayList<>();
            for (int[] p : prompts) {
                Collector col = new Collector();
                e.submit(greedy(p, max), col);
                cs.add(col);
            }
            for (int i = 0; i < prompts.length; i++) {
                Collector.Result r = cs.get(i).await();
                assertArrayEquals(expected.get(i), r.tokens(), fixture + ": prompt " + i + " over a shared prefix");
                assertEquals(512, r.usage().cachedTokens(), "prompt " + i);
            }
            long[] counts = e.sharedPrefixCountsForTest();
            assertEquals(1, counts[0], "the block stays resident after its last request: " + java.util.Arrays.toString(counts));
            assertEquals(1, counts[3], "... idle: " + java.util.Arrays.toString(counts));
            assertTrue(counts[1] >= 1 && counts[1] + counts[2] == prompts.length, java.util.Arrays.toString(counts));
            assertTrue(counts[2] >= 1, "requests admitted together share the block: " + java.util.Arrays.toString(counts));
            // the chunk past the prefix was stored from the request's own buffers: a repeat reuses it too
            Collector.Result again = run(e, greedy(prompts[1], max));
            assertEquals(768, again.usage().cachedTokens());
            assertArrayEquals(expected.get(1), again.tokens());
            Collector.Result longer = run(e, greedy(prompts[3], max));
            assertEquals(1024, longer.usage().cachedTokens());
            assertArrayEquals(expected.get(3), longer.tokens());
        }
    }

    /**
     * One client at a time over a cached prefix: the first request fills a block from the tier,
     * the next ones join it while it is idle (no tier read), within the idle budget; with a
     * budget of 0 each request reads the tier again; past the budget the least recently used
     * idle block goes. Every output equals the tier off's.
     */
    @Test
    void idlePrefixBlocksServeTheNextRequestWithinTheirBudgetAndStayExact() throws Exception {
        String fixture = "tiny-chat-llama";
        JsonNode ref = Fixtures.reference(fixture);
        int[] ids = Fixtures.ints(longest(ref).get("ids"));
        int[] a = java.util.Arrays.copyOf(ids, 512);
        int[] b = suffix(ids, 0, 512); // another 512-token prefix
        int[][] prompts = {join(a, suffix(ids, 3, 9)), join(a, suffix(ids, 60, 5)), join(b, suffix(ids, 11, 7)),
                join(a, suffix(ids, 17, 4)), join(b, suffix(ids, 23, 6))};
        int max = 6;
        List<int[]> expected = new ArrayList<>();
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir(fixture)))) {
            for (int[] p : prompts) {
                expected.add(run(e, greedy(p, max)).tokens());
            }
        }
        // one block: 2 x layers x kv_heads x 512 x head_dim floats
        EngineConfig base = EngineConfig.of(Fixtures.dir(fixture)).withKvCache(memoryTier());
        long block;
        try (GenerationEngine e = GenerationEngine.open(base)) {
            run(e, greedy(join(a, suffix(ids, 200, 3)), max)); // both prefixes into the tier
            run(e, greedy(join(b, suffix(ids, 210, 3)), max));
            for (int i = 0; i < 2; i++) {
                Collector.Result r = run(e, greedy(prompts[i], max));
                assertArrayEquals(expected.get(i), r.tokens(), "prompt " + i);
                assertEquals(512, r.usage().cachedTokens());
            }
            long[] c = e.sharedPrefixCountsForTest();
            assertEquals(1, c[1], "filled from the tier once: " + java.util.Arrays.toString(c));
            assertEquals(1, c[2], "the second request joined the idle block: " + java.util.Arrays.toString(c));
            block = c[4];
            assertTrue(block > 0, java.util.Arrays.toString(c));
        }
        // no budget: each request reads the tier
        try (GenerationEngine e = GenerationEngine.open(base.withIdlePrefixBytes(0))) {
            run(e, greedy(join(a, suffix(ids, 200, 3)), max));
            for (int i = 0; i < 2; i++) {
                assertArrayEquals(expected.get(i), run(e, greedy(prompts[i], max)).tokens(), "prompt " + i);
            }
            long[] c = e.sharedPrefixCountsForTest();
            assertEquals(0, c[0], java.util.Arrays.toString(c));
            assertEquals(2, c[1], "filled for each request: " + java.util.Arrays.toString(c));
            assertEquals(0, c[2], java.util.Arrays.toString(c));
        }
        // room for one idle block: a, a, b, a, b alternate; the older goes each time
        try (GenerationEngine e = GenerationEngine.open(base.withIdlePrefixBytes(block))) {
            run(e, greedy(join(a, suffix(ids, 200, 3)), max));
            run(e, greedy(join(b, suffix(ids, 210, 3)), max));
            for (int i = 0; i < prompts.length; i++) {
                Collector.Result r = run(e, greedy(prompts[i], max));
                assertArrayEquals(expected.get(i), r.tokens(), "prompt " + i);
                assertEquals(512, r.usage().cachedTokens(), "prompt " + i);
                assertTrue(e.sharedPrefixCountsForTest()[4] <= block, "idle bytes within the budget");
            }
            long[] c = e.sharedPrefixCountsForTest();
            assertEquals(4, c[1], "a, b, a, b filled; the second a joined: " + java.util.Arrays.toString(c));
            assertEquals(1, c[2], java.util.Arrays.toString(c));
            assertEquals(3, c[5], "evicted when the next prefix's block went idle: " + java.util.Arrays.toString(c));
            assertEquals(1, c[3], java.util.Arrays.toString(c));
        }
    }

    @Test
    void aDiskTierHitAfterARestartGivesTheSameTokensAndCorruptChunksCostOnlyARecompute() throws Exception {
        JsonNode ref = Fixtures.reference("tiny-chat-gpt2");
        JsonNode c = longest(ref);
        int[] ids = Fixtures.ints(c.get("ids"));
        int max = ref.get("max_new_tokens").intValue();
        Path disk = tmp.resolve("kv");
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-gpt2")).withKvCache(diskTier(disk)))) {
            assertEquals(0, run(e, greedy(ids, max)).usage().cachedTokens());
        } // close flushes the write-behind
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-gpt2")).withKvCache(diskTier(disk)))) {
            Collector.Result hit = run(e, greedy(ids, max));
            assertEquals((ids.length - 1) / 256 * 256, hit.usage().cachedTokens());
            assertArrayEquals(Fixtures.ints(c.get("generated")), hit.tokens());
        }
        // damage every chunk file: flip bytes in the payload of one, truncate another
        List<Path> chunks;
        try (Stream<Path> s = Files.list(disk)) {
            chunks = s.filter(p -> p.toString().endsWith(".kv")).sorted().toList();
        }
        assertTrue(chunks.size() >= 4, chunks.toString());
        byte[] b = Files.readAllBytes(chunks.get(0));
        b[b.length - 100] ^= 0x55;
        Files.write(chunks.get(0), b);
        Files.write(chunks.get(1), java.util.Arrays.copyOf(Files.readAllBytes(chunks.get(1)), 200));
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-gpt2")).withKvCache(diskTier(disk)))) {
            Collector.Result r = run(e, greedy(ids, max));
            assertArrayEquals(Fixtures.ints(c.get("generated")), r.tokens(), "damaged chunks must cost a recompute, not tokens");
        }
    }

    @Test
    void redisSharedByTwoEnginesAndStoppedMidRunCostsOnlyRecomputes() throws Exception {
        JsonNode ref = Fixtures.reference("tiny-chat-llama");
        JsonNode c = longest(ref);
        int[] ids = Fixtures.ints(c.get("ids"));
        int[] want = Fixtures.ints(c.get("generated"));
        int max = ref.get("max_new_tokens").intValue();
        try (LocalRedis redis = new LocalRedis(Files.createDirectories(tmp.resolve("redis")))) {
            redis.start();
            KvCacheConfig kv = KvCacheConfig.builder().localCpu(false).remoteUrl(redis.url()).build();
            try (GenerationEngine a = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama")).withKvCache(kv))) {
                assertEquals(0, run(a, greedy(ids, max)).usage().cachedTokens());
            }
            // another engine (another serving node) on the same server finds the chunks
            try (GenerationEngine b = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama")).withKvCache(kv))) {
                Collector.Result hit = run(b, greedy(ids, max));
                assertEquals((ids.length - 1) / 256 * 256, hit.usage().cachedTokens());
                assertArrayEquals(want, hit.tokens());
                redis.stop();
                Collector.Result away = run(b, greedy(ids, max));
                assertEquals(0, away.usage().cachedTokens(), "Redis is away: a miss");
                assertArrayEquals(want, away.tokens(), "Redis away must cost a recompute, not tokens");
            }
        }
    }

    @Test
    void aChunkOfAnotherLayoutIsNeverServed() throws Exception {
        // the same identity and tokens, another KV layout (another dtype): the keys differ, so a miss
        io.phxfs.kvcache.KvLayout f32 = new io.phxfs.kvcache.KvLayout(2, 2, 16, io.phxfs.kvcache.KvLayout.DType.FLOAT32,
                io.phxfs.kvcache.KvLayout.Kind.KV_2LTD);
        io.phxfs.kvcache.KvLayout bf16 = new io.phxfs.kvcache.KvLayout(2, 2, 16, io.phxfs.kvcache.KvLayout.DType.BFLOAT16,
                io.phxfs.kvcache.KvLayout.Kind.KV_2LTD);
        Path disk = tmp.resolve("layouts");
        int[] tokens = new int[600];
        java.util.Arrays.setAll(tokens, i -> i % 500);
        io.phxfs.core.Phoenix phx = io.phxfs.core.Phoenix.open();
        try (PrefixCache a = new PrefixCache(diskTier(disk), f32, "same-model");
             io.phxfs.core.RegisteredBuffer buf = phx.host().allocate(f32.bytesPerChunk(512))) {
            io.phxfs.kvcache.ChunkedKv kv = new io.phxfs.kvcache.ChunkedKv(buf, f32, 256);
            assertEquals(512, a.tierForTest().store(java.util.Arrays.copyOf(tokens, 512), a.extraForTest(null), kv));
            assertEquals(512, a.tierForTest().lookup(java.util.Arrays.copyOf(tokens, 512), a.extraForTest(null)));
        }
        try (PrefixCache b = new PrefixCache(diskTier(disk), bf16, "same-model")) {
            assertEquals(0, b.tierForTest().lookup(java.util.Arrays.copyOf(tokens, 512), b.extraForTest(null)));
        }
    }

    @Test
    void anotherModelNeverHitsAnotherModelsChunks() throws Exception {
        // the same token ids through two checkpoints that share a disk tier
        Path disk = tmp.resolve("shared");
        JsonNode ref = Fixtures.reference("tiny-chat-gpt2");
        int[] ids = Fixtures.ints(longest(ref).get("ids"));
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-gpt2")).withKvCache(diskTier(disk)))) {
            run(e, greedy(ids, 4));
        }
        int[] inVocab = java.util.Arrays.stream(ids).map(i -> i % 900).toArray();
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama")).withKvCache(diskTier(disk)))) {
            assertEquals(0, run(e, greedy(inVocab, 4)).usage().cachedTokens(), "KV of tiny-chat-gpt2 served to tiny-chat-llama");
        }
        // a copy of the checkpoint with one weight byte changed is another model too
        Path copy = tmp.resolve("changed");
        Files.createDirectories(copy);
        try (Stream<Path> s = Files.list(Fixtures.dir("tiny-chat-gpt2"))) {
            for (Path p : s.toList()) {
                Files.copy(p, copy.resolve(p.getFileName()));
            }
        }
        // one tensor in the middle of the file changed throughout, as a merged adapter changes
        // some tensors only, far from the file's start and end (the old identity sampled only
        // the file's start, middle and end)
        io.phxfs.safetensors.SafetensorsHeader h = io.phxfs.safetensors.SafetensorsParser.standard().parse(copy.resolve("model.safetensors"));
        List<io.phxfs.safetensors.TensorInfo> ts = new ArrayList<>(h.tensors());
        ts.sort(java.util.Comparator.comparingLong(h::fileOffset));
        io.phxfs.safetensors.TensorInfo mid = ts.get(ts.size() / 2);
        byte[] w = Files.readAllBytes(copy.resolve("model.safetensors"));
        for (long at = h.fileOffset(mid) + 1; at < h.fileOffset(mid) + mid.nbytes(); at += 997) {
            w[(int) at] ^= 1;
        }
        assertTrue(!mid.name().contains("wte") && !mid.name().contains("ln_f"), mid.name());
        Files.write(copy.resolve("model.safetensors"), w);
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(copy).withKvCache(diskTier(disk)))) {
            assertEquals(0, run(e, greedy(ids, 4)).usage().cachedTokens(), "a changed checkpoint reused KV");
        }
    }

    @Test
    void sampling() throws Exception {
        JsonNode ref = Fixtures.reference("tiny-chat-llama");
        int[] ids = Fixtures.ints(ref.get("completions").get(0).get("ids"));
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama")))) {
            SamplingParams p = new SamplingParams(1.0, 0.95, 50, 1234L, 24, List.of(), true);
            Collector.Result a = run(e, new GenerationRequest("a", ids, p, null));
            Collector.Result b = run(e, new GenerationRequest("b", ids, p, null));
            assertArrayEquals(a.tokens(), b.tokens(), "same seed, same tokens");
            SamplingParams other = new SamplingParams(1.0, 0.95, 50, 99L, 24, List.of(), true);
            assertNotEquals(java.util.Arrays.toString(a.tokens()), java.util.Arrays.toString(run(e, new GenerationRequest("c", ids, other, null)).tokens()));
            // top_k 1 is greedy whatever the temperature
            Collector.Result k1 = run(e, new GenerationRequest("d", ids, new SamplingParams(1.5, 1, 1, 7L, 16, List.of(), false), null));
            assertArrayEquals(Fixtures.ints(ref.get("completions").get(0).get("generated")), k1.tokens());
            // a seeded request gives the same tokens in a batch as alone
            List<Collector> cs = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Collector col = new Collector();
                e.submit(new GenerationRequest("e" + i, ids, i == 0 ? p : new SamplingParams(1.0, 1, 0, (long) i, 24, List.of(), true), null), col);
                cs.add(col);
            }
            assertArrayEquals(a.tokens(), cs.get(0).await().tokens());
        }
    }

    @Test
    void stopStringsEndTheTextBeforeThemAndPiecesNeverSplitCharacters() throws Exception {
        JsonNode ref = Fixtures.reference("tiny-chat-llama");
        JsonNode c = ref.get("completions").get(0);
        String full = c.get("generated_text").asText();
        String stop = full.substring(full.length() / 2, full.length() / 2 + 3);
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-llama")))) {
            Collector.Result r = run(e, new GenerationRequest("s", Fixtures.ints(c.get("ids")),
                    new SamplingParams(0, 1, 0, null, 16, List.of("never-there", stop), false), null));
            assertEquals(full.substring(0, full.indexOf(stop)), r.text());
            assertEquals(FinishReason.STOP, r.reason());
            for (String piece : r.pieces()) {
                assertTrue(piece.isEmpty() || !Character.isHighSurrogate(piece.charAt(piece.length() - 1)), piece);
            }
        }
    }

    @Test
    void limitsAreRefusedWithTheReasonAndTheQueueIsBounded() throws Exception {
        try (GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-gpt2")).withLimits(1, 1))) {
            int ctx = e.model().contextLength();
            IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
                    () -> e.submit(greedy(new int[ctx - 10], 11), new Collector()));
            assertTrue(tooLong.getMessage().contains("past the model's context of " + ctx), tooLong.getMessage());
            assertThrows(IllegalArgumentException.class, () -> e.submit(greedy(new int[] {1, 5000}, 4), new Collector()));
            assertThrows(IllegalArgumentException.class, () -> SamplingParams.greedy(0));
            // one running, one waiting, the third refused
            Collector a = new Collector();
            Collector b = new Collector();
            GenerationHandle ha = e.submit(greedy(new int[] {1, 2, 3}, 1500), a);
            e.submit(greedy(new int[] {1, 2, 3}, 4), b);
            assertThrows(QueueFullException.class, () -> e.submit(greedy(new int[] {1}, 4), new Collector()));
            ha.cancel();
            assertEquals(FinishReason.CANCELLED, a.await().reason());
            assertEquals(FinishReason.LENGTH, b.await().reason());
            assertEquals(4, b.await().usage().completionTokens());
        }
    }

    @Test
    void closeDrainsWhatIsQueued() throws Exception {
        GenerationEngine e = GenerationEngine.open(EngineConfig.of(Fixtures.dir("tiny-chat-gpt2")).withLimits(2, 8));
        List<Collector> cs = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Collector c = new Collector();
            e.submit(greedy(new int[] {1, 2, 3 + i}, 8), c);
            cs.add(c);
        }
        e.close();
        e.close();
        for (Collector c : cs) {
            assertTrue(c.future().isDone());
            assertEquals(8, c.await().usage().completionTokens());
        }
        assertThrows(IllegalStateException.class, () -> e.submit(greedy(new int[] {1}, 1), new Collector()));
    }
}
