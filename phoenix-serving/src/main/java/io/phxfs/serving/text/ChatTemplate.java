package io.phxfs.serving.text;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A checkpoint's chat template, rendered as transformers'
 * {@code apply_chat_template(messages, tokenize=False, add_generation_prompt=...)} renders it:
 * Jinja2 in transformers' environment (rebuilt on jinjava, see {@code JinjaEnvironment}) with the variables
 * {@code messages}, {@code add_generation_prompt}, {@code tools} and {@code documents} (None
 * unless given), the tokenizer's special tokens and any extra variables. Immutable and safe for
 * concurrent use; the template's syntax is checked when it is created.
 */
public final class ChatTemplate {
    private static final String JINJA_FILE = "chat_template.jinja";
    private static final String CONFIG_FIELD = "chat_template";

    private final String name;
    private final String rawSource;
    private final com.hubspot.jinjava.tree.Node template;
    private final Map<String, String> specialTokens;
    private final Clock clock;

    private ChatTemplate(String name, String source, Map<String, String> specialTokens, Clock clock) {
        this.name = name;
        this.rawSource = source;
        this.specialTokens = Collections.unmodifiableMap(new LinkedHashMap<>(specialTokens));
        this.clock = clock;
        this.template = JinjaEnvironment.INSTANCE.parse(name, JinjaEnvironment.normalize(source));
    }

    /**
     * The template of a model directory: {@code chat_template.jinja} (the transformers 5 layout)
     * when present, else tokenizer_config.json's {@code chat_template}, a string or a list of
     * <code>{"name": ..., "template": ...}</code> of which the one named "default" is used.
     *
     * @param modelDir the checkpoint directory
     * @param specialTokens the template variables for special tokens, as {@link HfTokenizer#specialTokens()}
     * @return the template, or empty when the checkpoint has none
     * @throws IOException when a file cannot be read or the field is malformed (the message names the file and field)
     * @throws ChatTemplateException when the template has a syntax error (the message names the file and line)
     */
    public static Optional<ChatTemplate> load(Path modelDir, Map<String, String> specialTokens) throws IOException {
        Path jinja = modelDir.resolve(JINJA_FILE);
        if (Files.exists(jinja)) {
            return Optional.of(new ChatTemplate(jinja.toString(), JsonFile.readText(jinja), specialTokens,
                    Clock.systemDefaultZone()));
        }
        Optional<JsonFile> config = JsonFile.readIfPresent(modelDir.resolve(TokenizerConfig.FILE));
        if (config.isEmpty()) {
            return Optional.empty();
        }
        JsonNode field = config.get().root().get(CONFIG_FIELD);
        if (field == null || field.isNull()) {
            return Optional.empty();
        }
        String name = config.get().path() + " (" + CONFIG_FIELD + ")";
        return Optional.of(new ChatTemplate(name, templateText(config.get(), field), specialTokens,
                Clock.systemDefaultZone()));
    }

    private static String templateText(JsonFile file, JsonNode field) throws IOException {
        if (field.isTextual()) {
            return field.asText();
        }
        if (!field.isArray()) {
            throw file.fieldError(CONFIG_FIELD, "expected a string or a list of {\"name\", \"template\"}, got "
                    + JsonFile.describe(field));
        }
        for (int i = 0; i < field.size(); i++) {
            JsonNode entry = field.get(i);
            JsonNode entryName = entry.get("name");
            JsonNode template = entry.get("template");
            if (!entry.isObject() || entryName == null || !entryName.isTextual() || template == null
                    || !template.isTextual()) {
                throw file.fieldError(CONFIG_FIELD + "[" + i + "]", "expected {\"name\": string, \"template\": string}");
            }
            if (entryName.asText().equals("default")) {
                return template.asText();
            }
        }
        throw file.fieldError(CONFIG_FIELD, "a list of named templates without one named \"default\"");
    }

    /**
     * A template from its source text.
     *
     * @param source the Jinja2 template
     * @param specialTokens the template variables for special tokens, as {@link HfTokenizer#specialTokens()}
     * @return the template
     * @throws ChatTemplateException when the template has a syntax error (the message names the line)
     */
    public static ChatTemplate of(String source, Map<String, String> specialTokens) {
        return new ChatTemplate("<template>", Objects.requireNonNull(source, "source"), specialTokens,
                Clock.systemDefaultZone());
    }

    /** The same template with strftime_now reading {@code clock}, for reproducible renders. */
    ChatTemplate withClock(Clock clock) {
        return new ChatTemplate(name, rawSource, specialTokens, clock);
    }

    /**
     * Renders a conversation.
     *
     * @param messages the messages: maps with "role", "content" and whatever else the template reads
     * @param addGenerationPrompt whether to end with the assistant turn's opening
     * @return the prompt text
     * @throws ChatTemplateException when the template raises (its message verbatim) or fails
     */
    public String render(List<Map<String, Object>> messages, boolean addGenerationPrompt) {
        return render(messages, addGenerationPrompt, Map.of());
    }

    /**
     * Renders a conversation with extra template variables ({@code tools}, {@code documents},
     * {@code enable_thinking}, {@code date_string}, ...), which take precedence over the special tokens.
     *
     * @param messages the messages: maps with "role", "content" and whatever else the template reads
     * @param addGenerationPrompt whether to end with the assistant turn's opening
     * @param extraVariables more variables for the template; values may be strings, numbers,
     *        booleans, null, lists, maps or Jackson nodes
     * @return the prompt text
     * @throws ChatTemplateException when the template raises (its message verbatim) or fails
     */
    public String render(List<Map<String, Object>> messages, boolean addGenerationPrompt,
            Map<String, Object> extraVariables) {
        Map<String, Object> variables = new HashMap<>(specialTokens);
        variables.put("tools", null);
        variables.put("documents", null);
        for (Map.Entry<String, Object> e : extraVariables.entrySet()) {
            variables.put(e.getKey(), plain(e.getValue()));
        }
        variables.put("messages", plain(messages));
        variables.put("add_generation_prompt", addGenerationPrompt);
        return JinjaEnvironment.INSTANCE.render(template, variables, clock);
    }

    /** Renders with exactly {@code variables} (no special tokens, no defaults), for the Jinja2 comparison tests. */
    String renderVariables(Map<String, Object> variables) {
        Map<String, Object> plain = new HashMap<>();
        variables.forEach((k, v) -> plain.put(k, plain(v)));
        return JinjaEnvironment.INSTANCE.render(template, plain, clock);
    }

    /** Lists, maps and scalars the template layer understands; Jackson nodes and arrays become those. */
    private static Object plain(Object v) {
        if (v instanceof JsonNode n) {
            return json(n);
        }
        if (v instanceof Map<?, ?> m) {
            Map<String, Object> out = new LinkedHashMap<>();
            m.forEach((k, x) -> out.put(String.valueOf(k), plain(x)));
            return out;
        }
        if (v instanceof Iterable<?> it) {
            List<Object> out = new ArrayList<>();
            it.forEach(x -> out.add(plain(x)));
            return out;
        }
        if (v instanceof Object[] a) {
            List<Object> out = new ArrayList<>();
            for (Object x : a) {
                out.add(plain(x));
            }
            return out;
        }
        if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        if (v instanceof Float f) {
            return f.doubleValue();
        }
        if (v instanceof Character c) {
            return c.toString();
        }
        return v;
    }

    private static Object json(JsonNode n) {
        if (n.isObject()) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> e : n.properties()) {
                out.put(e.getKey(), json(e.getValue()));
            }
            return out;
        }
        if (n.isArray()) {
            List<Object> out = new ArrayList<>();
            n.forEach(x -> out.add(json(x)));
            return out;
        }
        if (n.isTextual()) {
            return n.asText();
        }
        if (n.isBoolean()) {
            return n.booleanValue();
        }
        if (n.isIntegralNumber()) {
            return n.canConvertToLong() ? (Object) n.longValue() : n.bigIntegerValue();
        }
        if (n.isNumber()) {
            return n.doubleValue();
        }
        return null;
    }

    @Override
    public String toString() {
        return "ChatTemplate[" + name + "]";
    }
}
