import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.phxfs.serving.guided.Guide;
import io.phxfs.serving.guided.GuidedVocabulary;
import io.phxfs.serving.guided.JsonSchemaMatcher;
import io.phxfs.serving.guided.MatchState;
import io.phxfs.serving.guided.OutputGrammar;
import io.phxfs.serving.guided.ReasoningGate;
import io.phxfs.serving.guided.TextGrammar;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.BitSet;
import java.util.Random;
import java.util.Set;

/**
 * Guided decoding's cost per step on real vocabularies: OpenAI's cl100k_base (100,256 tokens, the
 * base Llama 3 extended to 128k) and o200k_base (200,000), read from the tiktoken npm package's
 * encoder files (scripts/bench-guided.sh fetches them). For a schema of the serve tests: the
 * trie's build, one walk of the vocabulary from states along an answer (the allowed set), and a
 * 300-step guided generation from random logits through Guide.mask (with its per-state cache),
 * as the engine runs it. Then a bounded string (maxLength, whose every position is a new state, so
 * the cache never answers) written with English text, tokenized greedily (longest token first):
 * one uncached walk per step. Then the regular languages (a format uri with pydantic's maxLength,
 * a regex, a choice) and a reasoning block before a schema's value, each text written token by
 * token (greedy) through Guide.mask as the engine runs it.
 *
 *   java -cp samples/target/phoenix-cli.jar scripts/probes/GuidedMaskBench.java ENCODER.json...
 */
public class GuidedMaskBench {
    static final String SCHEMA = """
            {"type": "object", "properties": {
              "city": {"type": "string", "maxLength": 40},
              "unit": {"enum": ["celsius", "fahrenheit"]},
              "days": {"type": "integer"},
              "ok": {"type": "boolean"},
              "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
              "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
              "summary": {"type": "string", "maxLength": 280}},
             "required": ["city", "unit", "days", "ok"], "additionalProperties": false}""";

    static byte[][] tokens(Path encoder) throws Exception {
        JsonNode e = new ObjectMapper().readTree(encoder.toFile());
        String[] lines = e.get("bpe_ranks").asText().split("\n");
        int max = 0;
        for (var it = e.get("special_tokens").properties().iterator(); it.hasNext();) {
            max = Math.max(max, it.next().getValue().asInt());
        }
        byte[][] out = new byte[max + 1][];
        for (String line : lines) {
            String[] f = line.split(" ");
            if (f.length < 2) {
                continue;
            }
            int rank = Integer.parseInt(f[1]);
            for (int i = 2; i < f.length; i++) {
                byte[] b = Base64.getDecoder().decode(f[i]);
                if (rank >= out.length) {
                    out = Arrays.copyOf(out, rank + 1);
                }
                out[rank++] = b;
            }
        }
        return out;
    }

    static double median(double[] x) {
        double[] s = x.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    static final String SENTENCE = "The weather in Zürich stays mild this week, with light rain on Tuesday and sunshine"
            + " returning by the weekend; pack a jacket, and expect 12 to 18 degrees in the afternoons.";

    /** The text as tokens, the longest token that is a prefix of the rest first. */
    static int[] greedyTokens(byte[][] vocab, byte[] text) {
        java.util.Map<String, Integer> ids = new java.util.HashMap<>();
        int longest = 0;
        for (int id = 0; id < vocab.length; id++) {
            if (vocab[id] != null && vocab[id].length > 0) {
                ids.putIfAbsent(new String(vocab[id], StandardCharsets.ISO_8859_1), id);
                longest = Math.max(longest, vocab[id].length);
            }
        }
        String rest = new String(text, StandardCharsets.ISO_8859_1);
        int[] out = new int[text.length];
        int n = 0;
        for (int at = 0; at < rest.length();) {
            for (int len = Math.min(longest, rest.length() - at); ; len--) {
                Integer id = ids.get(rest.substring(at, at + len));
                if (id != null) {
                    out[n++] = id;
                    at += len;
                    break;
                }
            }
        }
        return Arrays.copyOf(out, n);
    }

    /** Per step of writing {@link #SENTENCE} into the bounded "summary" string: one uncached walk (median of 3). */
    static void boundedString(GuidedVocabulary v, byte[][] vocab, JsonSchemaMatcher m) {
        String prefix = "{\"city\": \"Zurich\", \"unit\": \"celsius\", \"days\": 12, \"ok\": true, \"summary\": \"";
        int[] tokens = greedyTokens(vocab, SENTENCE.getBytes(StandardCharsets.UTF_8));
        for (int warm = 0; warm < 5; warm++) {
            MatchState s = m.start();
            for (byte b : prefix.getBytes(StandardCharsets.UTF_8)) {
                s = s.advance(b & 0xff);
            }
            double[] step = new double[tokens.length];
            long allowedSum = 0;
            for (int i = 0; i < tokens.length; i++) {
                double[] ms = new double[3];
                for (int r = 0; r < ms.length; r++) {
                    long t = System.nanoTime();
                    Object allowed = v.allowed(s);
                    ms[r] = (System.nanoTime() - t) / 1e6;
                    allowedSum += r == 0 ? count(allowed) : 0;
                }
                step[i] = median(ms);
                for (byte b : vocab[tokens[i]]) {
                    s = s.advance(b & 0xff);
                }
            }
            if (warm == 4) {
                System.out.printf("bounded string (maxLength 280), %d chars in %d tokens: allowed per step median %.2f ms,"
                        + " mean %.2f ms, max %.2f ms; %d allowed on average%n", SENTENCE.length(), tokens.length,
                        median(step), Arrays.stream(step).average().orElse(0), Arrays.stream(step).max().orElse(0),
                        allowedSum / tokens.length);
            }
        }
    }

    static int count(Object allowed) {
        return allowed instanceof BitSet b ? b.cardinality() : (Integer) invoke(allowed, "size");
    }

    static Object invoke(Object o, String method) {
        try {
            return o.getClass().getMethod(method).invoke(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Guide.mask per step along {@code text} (greedy tokens), the fifth of five passes: median, mean, max. */
    static void alongText(String what, GuidedVocabulary v, byte[][] vocab, OutputGrammar g, ReasoningGate gate, String text) {
        int[] tokens = greedyTokens(vocab, text.getBytes(StandardCharsets.UTF_8));
        for (int pass = 0; pass < 5; pass++) {
            Guide guide = new Guide(v, g, gate);
            double[] step = new double[tokens.length];
            for (int i = 0; i < tokens.length; i++) {
                float[] logits = new float[vocab.length];
                long t = System.nanoTime();
                guide.mask(logits, Set.of(vocab.length - 1));
                step[i] = (System.nanoTime() - t) / 1e6;
                if (logits[tokens[i]] == Float.NEGATIVE_INFINITY) {
                    throw new IllegalStateException(what + ": token " + i + " of the text refused");
                }
                guide.advance(tokens[i]);
            }
            if (pass == 4) {
                System.out.printf("| %s | %d | %.2f ms | %.2f ms | %.2f ms |%n", what, tokens.length, median(step),
                        Arrays.stream(step).average().orElse(0), Arrays.stream(step).max().orElse(0));
            }
        }
    }

    static void regularLanguages(GuidedVocabulary v, byte[][] vocab) throws Exception {
        ObjectMapper json = new ObjectMapper();
        System.out.println("| output | tokens | Guide.mask per step, median | mean | max |");
        System.out.println("|---|---|---|---|---|");
        JsonSchemaMatcher url = JsonSchemaMatcher.compile(json.readTree("{\"type\": \"object\", \"properties\": {\"url\":"
                + " {\"type\": \"string\", \"format\": \"uri\", \"minLength\": 1, \"maxLength\": 2083}}, \"required\": [\"url\"]}"));
        alongText("format uri, maxLength 2083 (pydantic HttpUrl)", v, vocab, url, null,
                "{\"url\": \"https://docs.example.com/guides/structured-outputs/regular-expressions?lang=en&page=2#syntax\"}");
        JsonSchemaMatcher code = JsonSchemaMatcher.compile(json.readTree("{\"type\": \"object\", \"properties\": {\"code\":"
                + " {\"type\": \"string\", \"pattern\": \"^[A-Z]{2}-\\\\d{3}$\"}, \"note\": {\"type\": \"string\","
                + " \"pattern\": \"^[A-Za-z ,.;']{0,200}$\"}}, \"required\": [\"code\", \"note\"]}"));
        alongText("pattern strings (a code, a 200-character note)", v, vocab, code, null,
                "{\"code\": \"ZH-042\", \"note\": \"Mild weather this week, with light rain on Tuesday; pack a jacket.\"}");
        alongText("regex `\\d{3}-\\d{4} [A-Z][a-z]+( [A-Z][a-z]+)*`", v, vocab,
                TextGrammar.regex("\\d{3}-\\d{4} [A-Z][a-z]+( [A-Z][a-z]+)*"), null, "555-0123 New York City");
        java.util.List<String> cities = new java.util.ArrayList<>();
        for (String c : ("Amsterdam Athens Bangkok Barcelona Beijing Berlin Bogota Boston Brussels Budapest Cairo Chicago"
                + " Copenhagen Delhi Dubai Dublin Geneva Hamburg Helsinki Istanbul Jakarta Lagos Lima Lisbon London Madrid"
                + " Manila Melbourne Miami Milan Montreal Moscow Mumbai Munich Nairobi Oslo Paris Prague Rome Santiago Seoul"
                + " Shanghai Singapore Stockholm Sydney Taipei Tokyo Toronto Vienna Warsaw Zurich").split(" ")) {
            cities.add(c);
        }
        alongText("choice among " + cities.size() + " cities", v, vocab, TextGrammar.choice(cities), null, "Copenhagen");
        JsonSchemaMatcher m = JsonSchemaMatcher.compile(json.readTree(SCHEMA));
        alongText("reasoning (inside the block), then the schema's value", v, vocab, m, ReasoningGate.inside("</think>"),
                SENTENCE + "\n</think>\n\n{\"city\": \"Zurich\", \"unit\": \"celsius\", \"days\": 12, \"ok\": true}");
        alongText("the same value without the block", v, vocab, m, null,
                "{\"city\": \"Zurich\", \"unit\": \"celsius\", \"days\": 12, \"ok\": true}");
    }

    public static void main(String[] args) throws Exception {
        JsonNode schema = new ObjectMapper().readTree(SCHEMA);
        for (String a : args) {
            byte[][] vocab = tokens(Path.of(a));
            long n = Arrays.stream(vocab).filter(b -> b != null).count();
            long t0 = System.nanoTime();
            GuidedVocabulary v = GuidedVocabulary.of(vocab);
            double build = (System.nanoTime() - t0) / 1e6;
            System.out.printf("%s: %d tokens, trie built in %.0f ms%n", Path.of(a).getFileName(), n, build);
            String[] prefixes = {"", "{", "{\"city\": \"Zu", "{\"city\": \"Zurich\", \"unit\": \"cel",
                "{\"city\": \"Zurich\", \"unit\": \"celsius\", \"days\": 1", "{\"city\": \"Zurich\", \"unit\": \"celsius\", \"days\": 12,"
                    + " \"ok\": true, \"note\": \"a free", "{\"city\": \"Zurich\", \"unit\": \"celsius\", \"days\": 12, \"ok\": true}"};
            System.out.println("| state (bytes so far) | allowed tokens | one walk of the vocabulary (median of 15) |");
            System.out.println("|---|---|---|");
            JsonSchemaMatcher m = JsonSchemaMatcher.compile(schema);
            for (int warm = 0; warm < 8; warm++) { // the JIT compiles the walk's paths in the first rounds
                for (String p : prefixes) {
                    MatchState s = m.start();
                    for (byte b : p.getBytes(StandardCharsets.UTF_8)) {
                        s = s.advance(b & 0xff);
                    }
                    double[] ms = new double[15];
                    Object allowed = null;
                    for (int r = 0; r < ms.length; r++) {
                        long t = System.nanoTime();
                        allowed = v.allowed(s);
                        ms[r] = (System.nanoTime() - t) / 1e6;
                    }
                    if (warm == 7) {
                        System.out.printf("| `%s` | %d | %.2f ms |%n", p.length() > 40 ? "..." + p.substring(p.length() - 37) : p,
                                count(allowed), median(ms));
                    }
                }
            }
            boundedString(v, vocab, m);
            regularLanguages(v, vocab);
            // a guided generation as the engine runs it: mask, choose, advance; the mask cache hit where the state repeats
            Random rnd = new Random(1);
            int eos = vocab.length - 1;
            double[] step = new double[300];
            int steps = 0;
            int ended = 0;
            ByteArrayOutputStream text = new ByteArrayOutputStream();
            for (int run = 0; run < 3; run++) {
                Guide g = new Guide(v, JsonSchemaMatcher.compile(schema));
                text.reset();
                for (int i = 0; i < 100; i++) {
                    float[] logits = new float[vocab.length];
                    for (int k = 0; k < logits.length; k++) {
                        logits[k] = (float) rnd.nextGaussian();
                    }
                    long t = System.nanoTime();
                    g.mask(logits, Set.of(eos));
                    step[steps++] = (System.nanoTime() - t) / 1e6;
                    int best = 0;
                    for (int k = 1; k < logits.length; k++) {
                        if (logits[k] > logits[best]) {
                            best = k;
                        }
                    }
                    if (best == eos) {
                        ended++;
                        break;
                    }
                    text.writeBytes(vocab[best]);
                    g.advance(best);
                }
            }
            double[] done = Arrays.copyOf(step, steps);
            double mean = Arrays.stream(done).average().orElse(0);
            System.out.printf("guided generation: %d steps (%d of 3 runs ended on their own): Guide.mask per step median %.2f ms,"
                    + " mean %.2f ms, max %.1f ms; last answer: %s%n", steps, ended, median(done), mean,
                    Arrays.stream(done).max().orElse(0), text.toString(StandardCharsets.UTF_8).replace("\n", "\\n"));
        }
    }
}
