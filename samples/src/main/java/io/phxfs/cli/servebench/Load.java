package io.phxfs.cli.servebench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The clients: streamed {@code /v1/completions} requests with token-id prompts (exact prompt
 * lengths), greedy, of a fixed length ({@code ignore_eos}), timed from the request's send to its
 * first SSE chunk and between chunks; the final usage chunk gives the cached tokens. Each
 * request's streamed text is kept, so that a setting's outputs can be compared with the tier
 * off's on the same prompts.
 */
final class Load {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private Load() {
    }

    private record One(int index, double ttft, List<Double> itl, int completion, int prompt, int cached, String text) {
    }

    static void once(String url, int[] prompt, int maxTokens) throws IOException, InterruptedException {
        request(url, 0, prompt, maxTokens);
    }

    static Result run(String url, List<int[]> prompts, int concurrency, int maxTokens) throws Exception {
        ConcurrentLinkedQueue<Integer> todo = new ConcurrentLinkedQueue<>();
        for (int i = 0; i < prompts.size(); i++) {
            todo.add(i);
        }
        List<One> done = java.util.Collections.synchronizedList(new ArrayList<>());
        long t0 = System.nanoTime();
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> fs = new ArrayList<>();
            for (int c = 0; c < concurrency; c++) {
                fs.add(clients.submit(() -> {
                    for (Integer i; (i = todo.poll()) != null; ) {
                        done.add(request(url, i, prompts.get(i), maxTokens));
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        }
        double wall = (System.nanoTime() - t0) / 1e9;
        double[] ttft = done.stream().mapToDouble(One::ttft).toArray();
        // the first request sent: after a restart, the one that reads the prefix from the tier
        double first = done.stream().filter(o -> o.index() == 0).mapToDouble(One::ttft).findFirst().orElse(Double.NaN);
        double[] itl = done.stream().flatMap(o -> o.itl().stream()).mapToDouble(Double::doubleValue).toArray();
        String[] texts = new String[prompts.size()];
        done.forEach(o -> texts[o.index()] = o.text());
        return new Result("", concurrency, ttft, first, itl, done.stream().mapToLong(One::completion).sum(),
                done.stream().mapToLong(One::prompt).sum(), done.stream().mapToLong(One::cached).sum(), wall, texts);
    }

    private static One request(String url, int index, int[] prompt, int maxTokens) throws IOException, InterruptedException {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", "bench"); // any name: the server answers 404 for a wrong one, so ask it first
        var arr = body.putArray("prompt");
        for (int t : prompt) {
            arr.add(t);
        }
        body.put("max_tokens", maxTokens);
        body.put("temperature", 0);
        body.put("ignore_eos", true);
        body.put("stream", true);
        body.putObject("stream_options").put("include_usage", true);
        body.put("model", Models.name(url));
        HttpRequest req = HttpRequest.newBuilder(URI.create(url + "/v1/completions")).timeout(Duration.ofMinutes(10))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
        long sent = System.nanoTime();
        HttpResponse<java.io.InputStream> resp = HTTP.send(req, HttpResponse.BodyHandlers.ofInputStream());
        if (resp.statusCode() != 200) {
            throw new IOException("POST /v1/completions: HTTP " + resp.statusCode() + ": "
                    + new String(resp.body().readAllBytes(), StandardCharsets.UTF_8));
        }
        double ttft = -1;
        long last = 0;
        List<Double> itl = new ArrayList<>();
        int completion = 0;
        int promptTokens = prompt.length;
        int cached = 0;
        StringBuilder text = new StringBuilder();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(resp.body(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                if (!line.startsWith("data: ")) {
                    continue;
                }
                String data = line.substring(6);
                if (data.equals("[DONE]")) {
                    break;
                }
                long now = System.nanoTime();
                JsonNode chunk = JSON.readTree(data);
                if (chunk.has("error")) {
                    throw new IOException("stream error: " + chunk.get("error"));
                }
                if (chunk.path("choices").size() > 0) {
                    text.append(chunk.path("choices").get(0).path("text").asText(""));
                    if (ttft < 0) {
                        ttft = (now - sent) / 1e9;
                    } else {
                        itl.add((now - last) / 1e9);
                    }
                    last = now;
                }
                JsonNode usage = chunk.path("usage");
                if (usage.isObject()) {
                    completion = usage.path("completion_tokens").asInt();
                    promptTokens = usage.path("prompt_tokens").asInt(promptTokens);
                    cached = usage.path("prompt_tokens_details").path("cached_tokens").asInt(0);
                }
            }
        }
        return new One(index, ttft, itl, completion, promptTokens, cached, text.toString());
    }
}
