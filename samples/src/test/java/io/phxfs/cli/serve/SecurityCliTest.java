package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code phoenix serve} as a process with security-1's options: the key from PHOENIX_API_KEY
 * or --api-key never printed (--help, the startup line, the log, answers, /metrics); a bind
 * beyond loopback without a key warns; OpenAI's SDK with the key works, with a wrong one gets
 * its AuthenticationError.
 */
class SecurityCliTest {
    private static final String KEY = "sk-phx-cli-secret-42d9e0";
    private static final Pattern URL = Pattern.compile("listening on http://([^/]+):(\\d+)/v1");

    record Server(Process process, int port, String line, Path err) {
        String base() {
            return "http://127.0.0.1:" + port;
        }
    }

    private static Server start(Path tmp, boolean keyInEnv, String... args) throws Exception {
        List<String> cmd = ServeCliTest.cli("serve", ServeTesting.model(ServeTesting.LLAMA).toString(), "--port", "0",
                "--served-model-name", "tiny");
        cmd.addAll(List.of(args));
        Path err = Files.createTempFile(tmp, "stderr", ".txt");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(err.toFile());
        pb.environment().remove("PHOENIX_API_KEY");
        if (keyInEnv) {
            pb.environment().put("PHOENIX_API_KEY", KEY);
        }
        Process p = pb.start();
        String line = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
        assertTrue(line != null, "nothing printed; stderr:\n" + Files.readString(err));
        Matcher m = URL.matcher(line);
        assertTrue(m.find(), line);
        return new Server(p, Integer.parseInt(m.group(2)), line, err);
    }

    private static String stop(Server s) throws Exception {
        s.process().destroy();
        assertTrue(s.process().waitFor(60, TimeUnit.SECONDS));
        return Files.readString(s.err());
    }

    @Test
    void theKeyIsNeverPrintedAndTheSdkUsesIt(@TempDir Path tmp) throws Exception {
        ServeTesting.Proc help = ServeTesting.run(ServeCliTest.cli("serve", "--help"), null, Duration.ofMinutes(1));
        assertEquals(0, help.exit(), help.toString());
        for (String o : List.of("--api-key", "--metrics-public", "--cache-salt", "--max-body-bytes",
                "--max-connections", "--idle-timeout", "--header-timeout")) {
            assertTrue(help.out().contains(o), o + " in\n" + help.out());
        }

        Server s = start(tmp, true, "--cache-salt", "salt-secret-77");
        try {
            assertTrue(s.line().contains("API key required"), s.line());
            assertFalse(s.line().contains(KEY), s.line());
            String base = s.base();
            ServeTesting.Proc none = ServeTesting.run(List.of(ServeTesting.curl(), "-sS", "-i", base + "/v1/models"),
                    null, Duration.ofMinutes(1));
            assertTrue(none.out().startsWith("HTTP/1.1 401"), none.out());
            ServeTesting.Proc wrong = ServeTesting.run(List.of(ServeTesting.curl(), "-sS", "-i", "-H",
                    "Authorization: Bearer " + KEY + "-wrong", base + "/v1/models"), null, Duration.ofMinutes(1));
            assertTrue(wrong.out().startsWith("HTTP/1.1 401"), wrong.out());
            assertFalse(wrong.out().contains(KEY), wrong.out());
            ServeTesting.Proc metrics = ServeTesting.run(List.of(ServeTesting.curl(), "-sS", "-H",
                    "Authorization: Bearer " + KEY, base + "/metrics"), null, Duration.ofMinutes(1));
            assertTrue(metrics.out().contains("phoenix:num_requests_running"), metrics.out());
            assertFalse(metrics.out().contains(KEY) || metrics.out().contains("salt-secret-77"), "no secret in /metrics");

            JsonNode out = ServeTesting.sdk(ServeTesting.JSON.createObjectNode().put("script", "auth")
                    .put("baseURL", base + "/v1").put("model", "tiny").put("key", KEY), AUTH_SCRIPT);
            assertEquals("ok", out.path("good").path("status").asText(), out.toString());
            assertTrue(out.path("good").path("text").isTextual(), out.toString());
            assertEquals("AuthenticationError", out.path("wrong").path("class").asText(), out.toString());
            assertEquals(401, out.path("wrong").path("status").asInt(), out.toString());
            assertEquals("invalid_api_key", out.path("wrong").path("code").asText(), out.toString());
        } finally {
            String err = stop(s);
            assertFalse(err.contains(KEY) || err.contains("salt-secret-77"), err);
            assertFalse(err.contains("warning"), "loopback with a key: no warning\n" + err);
        }
        // the help with the key in the environment shows no default for it
        ProcessBuilder pb = new ProcessBuilder(ServeCliTest.cli("serve", "--help"));
        pb.environment().put("PHOENIX_API_KEY", KEY);
        Process p = pb.redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertFalse(text.contains(KEY), text);
    }

    @Test
    void aWideBindWithoutAKeyWarns(@TempDir Path tmp) throws Exception {
        Server open = start(tmp, false, "--bind", "0.0.0.0");
        assertTrue(stop(open).contains("warning: listening on 0.0.0.0"), "a warning at start");
        Server keyed = start(tmp, false, "--bind", "0.0.0.0", "--api-key", KEY);
        String err = stop(keyed);
        assertFalse(err.contains("warning"), err);
        assertFalse(err.contains(KEY) || keyed.line().contains(KEY), err);
        assertFalse(stop(start(tmp, false)).contains("warning"), "loopback: no warning");
    }

    /** OpenAI's Node SDK given the key, then a wrong one. */
    static final String AUTH_SCRIPT = """
            import OpenAI from 'openai';
            import { readFileSync } from 'node:fs';
            const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));
            const out = {};
            const good = new OpenAI({ baseURL: job.baseURL, apiKey: job.key, maxRetries: 0 });
            const r = await good.completions.create({ model: job.model, prompt: 'The quick brown fox', max_tokens: 2,
              temperature: 0 });
            out.good = { status: 'ok', text: r.choices[0].text };
            const bad = new OpenAI({ baseURL: job.baseURL, apiKey: job.key + '-wrong', maxRetries: 0 });
            try {
              await bad.completions.create({ model: job.model, prompt: 'x', max_tokens: 1 });
              out.wrong = { class: 'none' };
            } catch (e) {
              out.wrong = { class: e.constructor.name, status: e.status, code: e.code, message: e.message };
            }
            console.log(JSON.stringify(out));
            """;
}
