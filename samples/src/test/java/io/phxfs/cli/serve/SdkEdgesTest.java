package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * OpenAI's Node SDK on what its users send beyond the fixtures' chats: a served name as Hugging
 * Face names go ({@code org/model:tag}), which the SDK puts in the path encoded.
 */
class SdkEdgesTest {
    private static final String NAME = "org/" + ServeTesting.LLAMA + ":v1";

    /** Each case's outcome: the value, or the SDK's error class, status, code and message. */
    static final String SCRIPT = """
            import OpenAI from 'openai';
            import { readFileSync } from 'node:fs';
            const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));
            const client = new OpenAI({ baseURL: job.baseURL, apiKey: 'none', maxRetries: 0 });
            const out = {};
            async function t(name, f) {
              try {
                out[name] = { ok: await f() };
              } catch (e) {
                out[name] = { class: e.constructor.name, status: e.status ?? null, code: e.code ?? null,
                  param: e.param ?? null, message: e.message };
              }
            }
            await t('retrieve', async () => (await client.models.retrieve(job.model)).id);
            await t('retrieveOther', async () => (await client.models.retrieve('org/other')).id);
            await t('chat', async () => (await client.chat.completions.create({ model: job.model,
              messages: [{ role: 'user', content: 'Hello' }], max_tokens: 2 })).model);
            console.log(JSON.stringify(out));
            """;

    @Test
    void aServedNameWithASlashIsRetrieved() throws Exception {
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(ServeTesting.LLAMA), NAME, 8, 64, null)) {
            JsonNode out = ServeTesting.sdk(JSON.createObjectNode().put("baseURL", s.v1()).put("model", NAME), SCRIPT);
            assertEquals(NAME, out.path("retrieve").path("ok").asText(), out.toString());
            assertEquals("NotFoundError", out.path("retrieveOther").path("class").asText(), out.toString());
            assertEquals("model_not_found", out.path("retrieveOther").path("code").asText(), out.toString());
            assertEquals(NAME, out.path("chat").path("ok").asText(), out.toString());
            CurlTest.Http raw = CurlTest.get(s, "/v1/models/org%2F" + ServeTesting.LLAMA + "%3Av1");
            assertEquals(200, raw.status(), raw.body());
            assertEquals(NAME, raw.json().path("id").asText());
            assertEquals("", s.log().toString());
        }
    }
}
