package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --kv-config} through the server: a long prompt sent again comes partly from the KV
 * tier (usage.prompt_tokens_details.cached_tokens), with the same text; {@code cache_salt}
 * keeps prompts apart; /metrics shows the tier's series with its label.
 */
class PrefixCacheTest {
    private static final String FIXTURE = ServeTesting.LLAMA;

    private static JsonNode complete(ServeTesting.Running s, JsonNode c, String salt) throws Exception {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("prompt", c.path("prompt"));
        b.put("temperature", 0);
        if (salt != null) {
            b.put("cache_salt", salt);
        }
        CurlTest.Http h = CurlTest.post(s, "/v1/completions", b.toString());
        assertEquals(200, h.status(), h.body());
        JsonNode r = h.json();
        assertEquals(c.path("generated_text").asText(), r.path("choices").get(0).path("text").asText(),
                "the same text with the cache on");
        return r.path("usage");
    }

    @Test
    void aRepeatedLongPromptComesFromTheMemoryTier(@TempDir Path tmp) throws Exception {
        Path yaml = tmp.resolve("kv.yaml");
        Files.writeString(yaml, "chunk_size: 256\nlocal_cpu: true\nmax_local_cpu_size: 0.1\n");
        JsonNode ref = ServeTesting.reference(FIXTURE);
        JsonNode longest = null;
        for (JsonNode c : ref.path("completions")) {
            if (longest == null || c.path("ids").size() > longest.path("ids").size()) {
                longest = c;
            }
        }
        int prompt = longest.path("ids").size();
        assertTrue(prompt > 512, "a prompt of several chunks: " + prompt);
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, yaml)) {
            JsonNode first = complete(s, longest, null);
            assertEquals(0, first.path("prompt_tokens_details").path("cached_tokens").asInt());
            assertEquals(prompt, first.path("prompt_tokens").asInt());
            // the store is write-behind: the next request may come before it lands
            int cached = 0;
            for (int i = 0; i < 50 && cached == 0; i++) {
                cached = complete(s, longest, null).path("prompt_tokens_details").path("cached_tokens").asInt();
                if (cached == 0) {
                    Thread.sleep(100);
                }
            }
            assertTrue(cached > 0 && cached % 256 == 0 && cached < prompt, "whole chunks from the tier: " + cached);
            // another salt: nothing shared
            assertEquals(0, complete(s, longest, "tenant-b").path("prompt_tokens_details").path("cached_tokens").asInt());

            String scrape = CurlTest.get(s, "/metrics").body();
            String hits = "phoenix:kv_tier_hits_total{model_name=\"" + FIXTURE + "\",tier=\"memory\"}";
            assertTrue(ServeTesting.sample(scrape, hits) >= 1, hits + "\n" + scrape);
            assertTrue(ServeTesting.sample(scrape, "phoenix:prefix_cache_hits_total{model_name=\"" + FIXTURE + "\"}")
                    >= cached, scrape);
            assertTrue(ServeTesting.sample(scrape, "phoenix:prefix_cache_queries_total{model_name=\"" + FIXTURE
                    + "\"}") >= ServeTesting.sample(scrape, "phoenix:prefix_cache_hits_total{model_name=\"" + FIXTURE
                    + "\"}"), scrape);
            assertTrue(scrape.contains("phoenix:kv_tier_used_bytes{model_name=\"" + FIXTURE + "\",tier=\"memory\"}"),
                    scrape);
            assertTrue(scrape.contains("# TYPE phoenix:kv_store_requests_total counter"), scrape);
        }
    }
}
