package io.phxfs.cli.serve;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A web chat UI on another origin, as its browser speaks to the server (curl sends the exact
 * requests): the preflight ({@code OPTIONS} with {@code Origin}, {@code Access-Control-Request-Method}
 * and {@code -Headers}, never the API key), then the request itself with {@code Origin}.
 */
class CorsTest {
    private static final String FIXTURE = ServeTesting.LLAMA;
    private static final String KEY = "sk-cors-test-key";
    private static final String UI = "http://localhost:3000";

    private static CurlTest.Http curl(ServeTesting.Running s, String method, String path, String body,
                                      String... headers) {
        List<String> args = new ArrayList<>(List.of("-i", "-X", method));
        for (String h : headers) {
            args.addAll(List.of("-H", h));
        }
        if (body != null) {
            args.addAll(List.of("-H", "Content-Type: application/json", "--data-binary", body));
        }
        args.add(s.base() + path);
        return CurlTest.parse(ServeTesting.curl(args.toArray(String[]::new)));
    }

    /** What Chrome sends before the OpenAI SDK's POST from a page on {@code origin}. */
    private static CurlTest.Http preflight(ServeTesting.Running s, String origin) {
        return curl(s, "OPTIONS", "/v1/chat/completions", null, "Origin: " + origin,
                "Access-Control-Request-Method: POST",
                "Access-Control-Request-Headers: authorization,content-type,x-stainless-os,x-stainless-retry-count");
    }

    private static final String CHAT = "{\"model\":\"" + FIXTURE + "\",\"max_tokens\":2,\"messages\":"
            + "[{\"role\":\"user\",\"content\":\"hi\"}]}";

    @Test
    void anAllowedOriginsPreflightIsAnsweredWithoutTheKeyAndItsAnswersCarryTheOrigin() throws Exception {
        HttpPolicy p = HttpPolicy.defaults().withApiKey(KEY)
                .withCors(new CorsPolicy(List.of(UI), null, null, false));
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, null, p)) {
            CurlTest.Http pre = preflight(s, UI);
            assertEquals(200, pre.status(), pre.toString());
            assertEquals(UI, pre.header("Access-Control-Allow-Origin"));
            String methods = pre.header("Access-Control-Allow-Methods");
            assertTrue(methods != null && methods.contains("POST"), pre.toString());
            // the default "*" grants what was asked, as Starlette (vLLM) does: a literal "*" would not
            // cover Authorization (the fetch standard), nor anything with credentials
            String allowed = pre.header("Access-Control-Allow-Headers").toLowerCase(Locale.ROOT);
            assertTrue(allowed.contains("authorization") && allowed.contains("content-type")
                    && allowed.contains("x-stainless-os") && !allowed.contains("*"), allowed);
            assertNull(pre.header("Access-Control-Allow-Credentials"));

            CurlTest.Http ok = curl(s, "POST", "/v1/chat/completions", CHAT, "Origin: " + UI,
                    "Authorization: Bearer " + KEY);
            assertEquals(200, ok.status(), ok.body());
            assertEquals(UI, ok.header("Access-Control-Allow-Origin"));
            // the page can read why it was refused, too
            CurlTest.Http no = curl(s, "POST", "/v1/chat/completions", CHAT, "Origin: " + UI);
            assertEquals(401, no.status());
            assertEquals(UI, no.header("Access-Control-Allow-Origin"));

            // another origin: its preflight gets no grant (the browser then blocks the request)
            CurlTest.Http other = preflight(s, "https://evil.example");
            assertNull(other.header("Access-Control-Allow-Origin"), other.toString());
            CurlTest.Http otherPost = curl(s, "POST", "/v1/chat/completions", CHAT, "Origin: https://evil.example",
                    "Authorization: Bearer " + KEY);
            assertNull(otherPost.header("Access-Control-Allow-Origin"));
        }
    }

    @Test
    void anyOriginWithStar() throws Exception {
        HttpPolicy p = HttpPolicy.defaults().withCors(new CorsPolicy(List.of("*"), null, null, false));
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, null, p)) {
            CurlTest.Http pre = preflight(s, "https://chat.example.org");
            assertEquals(200, pre.status());
            assertEquals("https://chat.example.org", pre.header("Access-Control-Allow-Origin"));
            CurlTest.Http models = curl(s, "GET", "/v1/models", null, "Origin: https://chat.example.org");
            assertEquals(200, models.status());
            assertEquals("https://chat.example.org", models.header("Access-Control-Allow-Origin"));
        }
    }

    /**
     * With credentials a browser reads {@code Access-Control-Allow-Headers: *} as a header named
     * "*": the grant must name what was asked, or no JSON POST passes its preflight. vLLM's
     * {@code --allowed-headers '["*"]'} must let the API key through as well; a named list is
     * answered as named.
     */
    @Test
    void wildcardHeadersAreGrantedAsAskedWithCredentialsAndANamedListAsNamed() throws Exception {
        HttpPolicy p = HttpPolicy.defaults().withApiKey(KEY)
                .withCors(new CorsPolicy(List.of(UI), null, List.of("*"), true));
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, null, p)) {
            CurlTest.Http pre = preflight(s, UI);
            assertEquals(200, pre.status(), pre.toString());
            assertEquals(UI, pre.header("Access-Control-Allow-Origin"));
            assertEquals("true", pre.header("Access-Control-Allow-Credentials"));
            String allowed = pre.header("Access-Control-Allow-Headers").toLowerCase(Locale.ROOT);
            assertTrue(allowed.contains("content-type") && allowed.contains("authorization") && !allowed.contains("*"),
                    allowed);
            CurlTest.Http other = preflight(s, "https://evil.example");
            assertNull(other.header("Access-Control-Allow-Origin"), other.toString());
            CurlTest.Http ok = curl(s, "POST", "/v1/chat/completions", CHAT, "Origin: " + UI,
                    "Authorization: Bearer " + KEY);
            assertEquals(200, ok.status(), ok.body());
            assertEquals("true", ok.header("Access-Control-Allow-Credentials"));
        }
        HttpPolicy named = HttpPolicy.defaults().withCors(new CorsPolicy(List.of(UI), null, List.of("Content-Type"), false));
        try (ServeTesting.Running s = ServeTesting.start(ServeTesting.model(FIXTURE), FIXTURE, 8, 64, null, named)) {
            CurlTest.Http pre = preflight(s, UI);
            assertEquals("content-type", pre.header("Access-Control-Allow-Headers").toLowerCase(Locale.ROOT), pre.toString());
        }
    }

    @Test
    void byDefaultNoOriginIsGranted() throws Exception {
        try (ServeTesting.Running s = ServeTesting.start(FIXTURE)) {
            CurlTest.Http pre = preflight(s, UI);
            assertNull(pre.header("Access-Control-Allow-Origin"), pre.toString());
            CurlTest.Http ok = curl(s, "POST", "/v1/chat/completions", CHAT, "Origin: " + UI);
            assertEquals(200, ok.status());
            assertNull(ok.header("Access-Control-Allow-Origin"));
        }
    }

    @Test
    void theFlagsTakeVllmsJsonListsAndCommaListsAndRefuseWhatIsUnsafeOrMalformed() {
        assertEquals(List.of("http://a:1", "https://b"), ServeCommand.list("--allowed-origins",
                "[\"http://a:1\", \"https://b\"]"));
        assertEquals(List.of("http://a:1", "https://b"), ServeCommand.list("--allowed-origins", "http://a:1,https://b"));
        assertEquals(List.of(), ServeCommand.list("--allowed-origins", null));
        IllegalArgumentException slash = assertThrows(IllegalArgumentException.class,
                () -> new CorsPolicy(List.of("http://a:1/"), null, null, false));
        assertTrue(slash.getMessage().startsWith("--allowed-origins http://a:1/"), slash.getMessage());
        IllegalArgumentException any = assertThrows(IllegalArgumentException.class,
                () -> new CorsPolicy(List.of("*"), null, null, true));
        assertTrue(any.getMessage().contains("--allow-credentials"), any.getMessage());
    }
}
