package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The queue's bound and cancellation, with curl: a server that runs one request and queues one
 * answers 429 to the others and still serves afterwards; a client that disconnects mid-stream
 * has its request cancelled (the engine lets it go, the metrics count a cancelled finish).
 */
class QueueAndCancelTest {
    private static final String FIXTURE = ServeTesting.LLAMA;

    /** A request that runs as long as the context lets it: the prompt, then ~2,000 tokens past any EOS. */
    static String slow(boolean stream) {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.put("prompt", "The quick brown fox");
        b.put("max_tokens", 2000);
        b.put("ignore_eos", true);
        b.put("temperature", 0);
        b.put("stream", stream);
        return b.toString();
    }

    private static double cancelled(ServeTesting.Running s) {
        String scrape = CurlTest.get(s, "/metrics").body();
        return ServeTesting.sample(scrape, "phoenix:request_success_total{finished_reason=\"cancelled\",model_name=\""
                + FIXTURE + "\"}");
    }

    /** curl streaming in the background, its output read line by line. */
    record Background(Process process, BufferedReader out) {
        static Background stream(ServeTesting.Running s, String body) throws Exception {
            Process p = new ProcessBuilder(ServeTesting.curl(), "-sS", "-N", "-H", "Content-Type: application/json",
                    "--data-binary", body, s.base() + "/v1/completions").redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start();
            return new Background(p, new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
        }

        /** Waits for the first event: the request runs. */
        String firstEvent() throws Exception {
            String line;
            while ((line = out.readLine()) != null) {
                if (line.startsWith("data: ")) {
                    return line;
                }
            }
            throw new AssertionError("the stream ended before its first event");
        }

        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aFullQueueAnswers429AndTheServerGoesOn(@TempDir Path tmp) throws Exception {
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 1, 1, null)) {
            Background running = Background.stream(s, slow(true));
            running.firstEvent();
            assertTrue(ServeTesting.await(() -> s.server().engine().running() == 1, Duration.ofSeconds(10)));
            Background waiting = Background.stream(s, slow(true));
            assertTrue(ServeTesting.await(() -> s.server().engine().waiting() == 1, Duration.ofSeconds(10)),
                    "the second request waits: running " + s.server().engine().running() + ", waiting "
                            + s.server().engine().waiting());
            // both slots taken: four more at once are all refused
            List<String> args = new ArrayList<>(List.of("-Z", "--parallel-immediate"));
            for (int i = 0; i < 4; i++) {
                if (i > 0) {
                    args.add("--next");
                }
                Path out = tmp.resolve("r" + i);
                args.addAll(List.of("-sS", "-o", out.toString(), "-w", "%{http_code} %header{retry-after}\\n", "-H",
                        "Content-Type: application/json", "--data-binary", slow(false), s.base() + "/v1/completions"));
            }
            ServeTesting.Proc p = ServeTesting.curl(args.toArray(String[]::new));
            assertEquals(0, p.exit(), p.toString());
            assertEquals(List.of("429 1", "429 1", "429 1", "429 1"), p.out().lines().sorted().toList(), p.toString());
            for (int i = 0; i < 4; i++) {
                JsonNode e = JSON.readTree(Files.readString(tmp.resolve("r" + i))).path("error");
                assertEquals("rate_limit_exceeded", e.path("type").asText(), e.toString());
                assertEquals("rate_limit_exceeded", e.path("code").asText(), e.toString());
                assertTrue(e.path("message").asText().contains("busy"), e.toString());
                assertTrue(e.has("param"), e.toString());
            }
            // the clients go away: their requests are cancelled, running first, then the waiting one
            double before = cancelled(s);
            running.kill();
            waiting.kill();
            assertTrue(ServeTesting.await(() -> s.server().engine().running() + s.server().engine().waiting() == 0,
                    Duration.ofSeconds(30)), "cancelled: running " + s.server().engine().running() + ", waiting "
                    + s.server().engine().waiting());
            assertTrue(ServeTesting.await(() -> cancelled(s) >= before + 1, Duration.ofSeconds(10)),
                    "a cancelled finish counted");
            // and a request that fits is served
            ObjectNode b = JSON.createObjectNode();
            b.put("model", FIXTURE);
            JsonNode c = ServeTesting.reference(FIXTURE).path("completions").get(0);
            b.set("prompt", c.path("prompt"));
            b.put("temperature", 0);
            CurlTest.Http h = CurlTest.post(s, "/v1/completions", b.toString());
            assertEquals(200, h.status(), h.body());
            assertEquals(c.path("generated_text").asText(), h.json().path("choices").get(0).path("text").asText());
            assertEquals("", s.log().toString());
        }
    }

    @Test
    void aClientThatDisconnectsMidStreamCancelsItsRequest() throws Exception {
        try (ServeTesting.Running s = ServeTesting.start(FIXTURE)) {
            double before = cancelled(s);
            String scrape0 = CurlTest.get(s, "/metrics").body();
            double gen0 = ServeTesting.sample(scrape0, "phoenix:generation_tokens_total{model_name=\"" + FIXTURE + "\"}");
            Background b = Background.stream(s, slow(true));
            b.firstEvent();
            assertEquals(1, s.server().engine().running());
            b.kill();
            assertTrue(ServeTesting.await(() -> s.server().engine().running() == 0, Duration.ofSeconds(30)),
                    "the engine let the request go");
            assertTrue(ServeTesting.await(() -> cancelled(s) == before + 1, Duration.ofSeconds(10)),
                    "one cancelled finish: " + cancelled(s));
            double generated = ServeTesting.sample(CurlTest.get(s, "/metrics").body(),
                    "phoenix:generation_tokens_total{model_name=\"" + FIXTURE + "\"}") - gen0;
            assertTrue(generated < 2000, "cancelled before the end: " + generated + " tokens");
            assertEquals("", s.log().toString(), "a client going away is no error to log");
        }
    }
}
