package io.phxfs.cli.servebench;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The served model's name, from the server's own /v1/models, once per server. */
final class Models {
    private static final Map<String, String> NAMES = new ConcurrentHashMap<>();

    private Models() {
    }

    static String name(String url) {
        return NAMES.computeIfAbsent(url, u -> {
            try {
                HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(u + "/v1/models")).build(),
                        HttpResponse.BodyHandlers.ofString());
                return new ObjectMapper().readTree(r.body()).path("data").path(0).path("id").asText();
            } catch (IOException e) {
                throw new UncheckedIOException(u + "/v1/models: " + e.getMessage(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        });
    }
}
