package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * OpenAI's Node SDK on what its users send beyond the fixtures' chats: a served name as Hugging
 * Face names go ({@code org/model:tag}), which the SDK puts in the path encoded; vLLM's
 * {@code chat_template_kwargs} in the body ({@code extra_body} in Python), as sent for
 * {@code enable_thinking: false}.
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

    /** Chats with and without chat_template_kwargs: the prompt's token counts, and the refusals. */
    static final String KWARGS_SCRIPT = """
            import OpenAI from 'openai';
            import { readFileSync } from 'node:fs';
            const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));
            const client = new OpenAI({ baseURL: job.baseURL, apiKey: 'none', maxRetries: 0 });
            const out = {};
            const messages = [{ role: 'user', content: 'Hello' }];
            async function t(name, extra) {
              try {
                const r = await client.chat.completions.create({ model: job.model, messages, max_tokens: 1, ...extra });
                out[name] = { prompt_tokens: r.usage.prompt_tokens };
              } catch (e) {
                out[name] = { class: e.constructor.name, status: e.status ?? null, param: e.param ?? null,
                  message: e.message };
              }
            }
            await t('plain', {});
            await t('thinking', { chat_template_kwargs: { enable_thinking: true } });
            await t('noThinking', { chat_template_kwargs: { enable_thinking: false } });
            await t('notAnObject', { chat_template_kwargs: 'enable_thinking=false' });
            await t('messages', { chat_template_kwargs: { messages: [] } });
            console.log(JSON.stringify(out));
            """;

    @Test
    void chatTemplateKwargsReachTheTemplate(@TempDir Path tmp) throws Exception {
        // the fixture with a template that reads enable_thinking, as Qwen3's does
        Path model = tmp.resolve("thinking-llama");
        Files.createDirectories(model);
        try (Stream<Path> files = Files.list(ServeTesting.model(ServeTesting.LLAMA))) {
            for (Path f : files.toList()) {
                Files.copy(f, model.resolve(f.getFileName()));
            }
        }
        String template = Files.readString(model.resolve("chat_template.jinja"));
        Files.writeString(model.resolve("chat_template.jinja"), template.replace("{{- '<|start_header_id|>assistant"
                + "<|end_header_id|>\\n\\n' }}", "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
                + "\n    {%- if enable_thinking is defined and enable_thinking is false %}"
                + "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"));
        assertNotEquals(template, Files.readString(model.resolve("chat_template.jinja")), "the template changed");
        try (ServeTesting.Running s = ServeTesting.start(model, "thinking", 8, 64, null)) {
            JsonNode out = ServeTesting.sdk(JSON.createObjectNode().put("baseURL", s.v1()).put("model", "thinking"),
                    KWARGS_SCRIPT);
            int plain = out.path("plain").path("prompt_tokens").asInt(-1);
            assertTrue(plain > 0, out.toString());
            assertEquals(plain, out.path("thinking").path("prompt_tokens").asInt(), out.toString());
            assertTrue(out.path("noThinking").path("prompt_tokens").asInt() > plain,
                    "enable_thinking false adds the empty think block: " + out);
            for (String bad : new String[] {"notAnObject", "messages"}) {
                assertEquals("BadRequestError", out.path(bad).path("class").asText(), out.toString());
                assertEquals("chat_template_kwargs", out.path(bad).path("param").asText(), out.toString());
            }
            assertEquals("", s.log().toString());
        }
    }

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
            assertEquals(200, CurlTest.get(s, "/v1/models/org/" + ServeTesting.LLAMA + ":v1").status(), "unencoded");
            assertEquals("", s.log().toString());
        }
    }
}
