package io.phxfs.cli.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.cli.serve.ServeTesting.JSON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The queue's bound and cancellation, with curl and raw sockets: a server that runs one request
 * and queues one answers 429 to the others and still serves afterwards; a client that disconnects
 * mid-stream, or before a non-streamed answer, has its request cancelled (the engine lets it go,
 * the metrics count a cancelled finish), and watching for that leaves keep-alive intact.
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

    private static double generated(ServeTesting.Running s) {
        return ServeTesting.sample(CurlTest.get(s, "/metrics").body(),
                "phoenix:generation_tokens_total{model_name=\"" + FIXTURE + "\"}");
    }

    /** A request as an HTTP/1.1 client puts it on the wire. */
    static byte[] rawRequest(String method, String path, String body) {
        byte[] b = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        String head = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + (body == null ? "" : "Content-Type: application/json\r\nContent-Length: " + b.length + "\r\n")
                + "\r\n";
        byte[] h = head.getBytes(StandardCharsets.US_ASCII);
        byte[] all = Arrays.copyOf(h, h.length + b.length);
        System.arraycopy(b, 0, all, h.length, b.length);
        return all;
    }

    /** One response with a Content-Length body off a kept-alive connection. */
    static CurlTest.Http rawResponse(InputStream in) throws IOException {
        String status = line(in);
        List<String> headers = new ArrayList<>();
        for (String l = line(in); !l.isEmpty(); l = line(in)) {
            headers.add(l);
        }
        CurlTest.Http head = new CurlTest.Http(Integer.parseInt(status.split(" ")[1]), headers, "");
        String length = head.header("Content-Length");
        assertTrue(length != null, "no Content-Length: " + status + " " + headers);
        byte[] body = in.readNBytes(Integer.parseInt(length));
        return new CurlTest.Http(head.status(), headers, new String(body, StandardCharsets.UTF_8));
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new EOFException("the connection ended after \"" + b + "\"");
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    /** The reference's first completion, which the server must still answer as transformers did. */
    private static void servesAGoodRequest(ServeTesting.Running s) throws IOException {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        JsonNode c = ServeTesting.reference(FIXTURE).path("completions").get(0);
        b.set("prompt", c.path("prompt"));
        b.put("temperature", 0);
        CurlTest.Http h = CurlTest.post(s, "/v1/completions", b.toString());
        assertEquals(200, h.status(), h.body());
        assertEquals(c.path("generated_text").asText(), h.json().path("choices").get(0).path("text").asText());
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
                assertEquals(1, e.path("message").asText().split("retry", -1).length - 1, "one retry hint: " + e);
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
            servesAGoodRequest(s);
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

    /**
     * A stream's status line and headers go out at once, then nothing until its first token: a
     * client that gives up while its stream waits in the queue (a timeout, Ctrl-C) must leave the
     * queue then, not hold a place there (429s for the clients still waiting) and be prefilled
     * for no one once admitted.
     */
    @Test
    void aStreamWhoseClientLeavesWhileQueuedLeavesTheQueue() throws Exception {
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 1, 2, null)) {
            Background running = Background.stream(s, slow(true));
            running.firstEvent();
            String prefills = "phoenix:request_prefill_time_seconds_count{model_name=\"" + FIXTURE + "\"}";
            double prefilled = ServeTesting.sample(CurlTest.get(s, "/metrics").body(), prefills);
            double before = cancelled(s);
            Background waiting = Background.stream(s, slow(true));
            assertTrue(ServeTesting.await(() -> s.server().engine().waiting() == 1, Duration.ofSeconds(10)),
                    "the second stream waits");
            waiting.kill();
            assertTrue(ServeTesting.await(() -> s.server().engine().waiting() == 0, Duration.ofSeconds(30)),
                    "the stream whose client left is out of the queue: waiting " + s.server().engine().waiting());
            assertTrue(ServeTesting.await(() -> cancelled(s) == before + 1, Duration.ofSeconds(30)),
                    "one cancelled finish: " + (cancelled(s) - before));
            // (seen only at its first token, it would leave once the first stream ends, after its prefill)
            assertEquals(prefilled, ServeTesting.sample(CurlTest.get(s, "/metrics").body(), prefills),
                    "the left stream was never prefilled");
            running.kill();
            assertTrue(ServeTesting.await(() -> s.server().engine().running() == 0, Duration.ofSeconds(30)));
            servesAGoodRequest(s);
            assertEquals("", s.log().toString(), "a client going away is no error to log");
        }
    }

    /** A chunked stream off a kept-alive connection, through its last chunk: its events' text. */
    static String rawStream(InputStream in) throws IOException {
        String status = line(in);
        assertTrue(status.startsWith("HTTP/1.1 200"), status);
        List<String> headers = new ArrayList<>();
        for (String l = line(in); !l.isEmpty(); l = line(in)) {
            headers.add(l.toLowerCase(java.util.Locale.ROOT));
        }
        assertTrue(headers.contains("transfer-encoding: chunked"), headers.toString());
        StringBuilder body = new StringBuilder();
        for (int size = Integer.parseInt(line(in), 16); size > 0; size = Integer.parseInt(line(in), 16)) {
            body.append(new String(in.readNBytes(size), StandardCharsets.UTF_8));
            assertEquals("", line(in), "a chunk ends with CRLF");
        }
        assertEquals("", line(in), "no trailers");
        return body.toString();
    }

    /**
     * The watch stays on through a stream's events and is taken back before its end: the
     * connection then carries the next request; a byte pipelined during the stream (which the
     * watch took) ends the connection after the stream, never a 400 for the mangled request.
     */
    @Test
    void aStreamedAnswerKeepsItsConnectionAlive() throws Exception {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.put("prompt", "The quick brown fox");
        b.put("max_tokens", 300);
        b.put("ignore_eos", true);
        b.put("stream", true);
        try (ServeTesting.Running s = ServeTesting.start(FIXTURE);
             Socket socket = new Socket("127.0.0.1", s.server().port())) {
            socket.setSoTimeout(60_000);
            InputStream in = socket.getInputStream();
            for (int i = 0; i < 2; i++) {
                socket.getOutputStream().write(rawRequest("POST", "/v1/completions", b.toString()));
                assertTrue(rawStream(in).endsWith("data: [DONE]\n\n"), "stream " + i);
            }
            socket.getOutputStream().write(rawRequest("GET", "/health", null));
            assertEquals(200, rawResponse(in).status(), "a GET after two streams");

            double before = cancelled(s);
            socket.getOutputStream().write(rawRequest("POST", "/v1/completions", b.toString()));
            assertTrue(ServeTesting.await(() -> s.server().engine().running() == 1, Duration.ofSeconds(10)));
            socket.getOutputStream().write(rawRequest("GET", "/health", null));
            String events = rawStream(in);
            assertTrue(events.endsWith("data: [DONE]\n\n"), events);
            assertTrue(events.contains("\"finish_reason\":\"length\""), events);
            assertEquals(before, cancelled(s), "pipelined bytes are no disconnect");
            assertEquals(-1, in.read(), "the connection ends after the stream");
            servesAGoodRequest(s);
            assertEquals("", s.log().toString());
        }
    }

    /**
     * A non-streamed completion writes nothing until its end, so no write fails when its client
     * leaves: the server has to watch the connection. Both ways a client leaves: a close (FIN) and
     * a reset (RST).
     */
    @Test
    void aClientThatDisconnectsBeforeANonStreamedAnswerCancelsItsRequest() throws Exception {
        try (ServeTesting.Running s = ServeTesting.start(FIXTURE)) {
            for (boolean reset : new boolean[] {false, true}) {
                String how = reset ? "reset" : "closed";
                double before = cancelled(s);
                double gen0 = generated(s);
                try (Socket c = new Socket("127.0.0.1", s.server().port())) {
                    c.getOutputStream().write(rawRequest("POST", "/v1/completions", slow(false)));
                    c.getOutputStream().flush();
                    assertTrue(ServeTesting.await(() -> s.server().engine().running() == 1, Duration.ofSeconds(10)),
                            how + ": the request runs");
                    // some tokens in: the request is decoding, with nothing written that could fail
                    Thread.sleep(200);
                    if (reset) {
                        c.setSoLinger(true, 0);
                    }
                }
                // left alone, the request would end at max_tokens ("length"), in 10 s or more here
                assertTrue(ServeTesting.await(() -> s.server().engine().running() == 0, Duration.ofSeconds(10)),
                        how + ": the engine let the request go");
                assertTrue(ServeTesting.await(() -> cancelled(s) == before + 1, Duration.ofSeconds(10)),
                        how + ": one cancelled finish: " + (cancelled(s) - before));
                double tokens = generated(s) - gen0;
                assertTrue(tokens < 1000, how + ": stopped well before max_tokens (2000): " + tokens + " tokens");
            }
            servesAGoodRequest(s);
            assertEquals("", s.log().toString(), "a client going away is no error to log");
        }
    }

    /**
     * Jetty closes a connection whose request completes with a read interest still pending: the
     * watch for a client that leaves must be taken back before each answer, so that one
     * connection carries request after request.
     */
    @Test
    void aKeptAliveConnectionIsAnsweredRequestAfterRequest() throws Exception {
        JsonNode c = ServeTesting.reference(FIXTURE).path("completions").get(0);
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.set("prompt", c.path("prompt"));
        b.put("temperature", 0);
        try (ServeTesting.Running s = ServeTesting.start(FIXTURE);
             Socket socket = new Socket("127.0.0.1", s.server().port())) {
            socket.setSoTimeout(60_000);
            InputStream in = socket.getInputStream();
            for (int i = 0; i < 3; i++) {
                socket.getOutputStream().write(rawRequest("POST", "/v1/completions", b.toString()));
                CurlTest.Http h = rawResponse(in);
                assertEquals(200, h.status(), "request " + i + ": " + h.body());
                assertEquals(null, h.header("Connection"), "request " + i + ": " + h.headers());
                assertEquals(c.path("generated_text").asText(),
                        JSON.readTree(h.body()).path("choices").get(0).path("text").asText(), "request " + i);
            }
            socket.getOutputStream().write(rawRequest("GET", "/health", null));
            assertEquals(200, rawResponse(in).status(), "and a GET after them");
            assertEquals("", s.log().toString());
        }
    }

    /**
     * Bytes that come while a completion is computed (pipelining after a POST, which RFC 9112
     * asks clients not to do) are no disconnect: the request is answered, with Connection: close,
     * since the watch took a byte the next request needed.
     */
    @Test
    void bytesSentWhileANonStreamedAnswerIsComputedAreNoDisconnect() throws Exception {
        ObjectNode b = JSON.createObjectNode();
        b.put("model", FIXTURE);
        b.put("prompt", "The quick brown fox");
        // long enough (0.5 s warm, 10 s cold here) for the second request to come while the first computes
        b.put("max_tokens", 300);
        b.put("ignore_eos", true);
        b.put("temperature", 0);
        try (ServeTesting.Running s = ServeTesting.start(FIXTURE);
             Socket socket = new Socket("127.0.0.1", s.server().port())) {
            socket.setSoTimeout(60_000);
            double before = cancelled(s);
            socket.getOutputStream().write(rawRequest("POST", "/v1/completions", b.toString()));
            assertTrue(ServeTesting.await(() -> s.server().engine().running() == 1, Duration.ofSeconds(10)));
            socket.getOutputStream().write(rawRequest("GET", "/health", null));
            CurlTest.Http h = rawResponse(socket.getInputStream());
            assertEquals(200, h.status(), h.body());
            assertEquals("close", h.header("Connection"), h.headers().toString());
            JsonNode choice = JSON.readTree(h.body()).path("choices").get(0);
            assertEquals("length", choice.path("finish_reason").asText(), h.body());
            assertEquals(before, cancelled(s));
            // the pipelined GET is not answered: the client retries it on a new connection
            assertEquals(-1, socket.getInputStream().read());
            servesAGoodRequest(s);
            assertEquals("", s.log().toString());
        }
    }
}
