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
 * unless given), the tokenizer's special tokens and any extra variables. A checkpoint may carry
 * several named templates; each render picks one as transformers' {@code get_chat_template}
 * does: "tool_use" when {@code tools} is given and there is one, else "default". Immutable and
 * safe for concurrent use; the templates' syntax is checked when they are loaded.
 */
public final class ChatTemplate {
    private static final String JINJA_FILE = "chat_template.jinja";
    /** transformers (4.52 on) saves every template but the default one here, as NAME.jinja. */
    private static final String MORE_TEMPLATES_DIR = "additional_chat_templates";
    private static final String CONFIG_FIELD = "chat_template";
    private static final String DEFAULT = "default";
    private static final String TOOL_USE = "tool_use";

    private final String name;
    /** Template name to source, in the checkpoint's order. */
    private final Map<String, String> sources;
    private final Map<String, com.hubspot.jinjava.tree.Node> templates;
    private final Map<String, String> specialTokens;
    private final Clock clock;

    private ChatTemplate(String name, Map<String, String> sources, Map<String, String> specialTokens, Clock clock) {
        this.name = name;
        this.sources = Collections.unmodifiableMap(new LinkedHashMap<>(sources));
        this.specialTokens = Collections.unmodifiableMap(new LinkedHashMap<>(specialTokens));
        this.clock = clock;
        Map<String, com.hubspot.jinjava.tree.Node> parsed = new LinkedHashMap<>();
        boolean single = sources.size() == 1 && sources.containsKey(DEFAULT);
        for (Map.Entry<String, String> e : sources.entrySet()) {
            String label = single ? name : name + " [" + e.getKey() + "]";
            parsed.put(e.getKey(), JinjaEnvironment.INSTANCE.parse(label, JinjaEnvironment.normalize(e.getValue())));
        }
        this.templates = Collections.unmodifiableMap(parsed);
    }

    private ChatTemplate(String name, String source, Map<String, String> specialTokens, Clock clock) {
        this(name, Map.of(DEFAULT, source), specialTokens, clock);
    }

    /**
     * The templates of a model directory, as transformers' tokenizer loads them: the files
     * {@code chat_template.jinja} (the default template) and
     * {@code additional_chat_templates/NAME.jinja} (the transformers 5 layout) when any is
     * present, else tokenizer_config.json's {@code chat_template}, a string or a list of
     * <code>{"name": ..., "template": ...}</code>.
     *
     * @param modelDir the checkpoint directory
     * @param specialTokens the template variables for special tokens, as {@link HfTokenizer#specialTokens()}
     * @return the template, or empty when the checkpoint has none
     * @throws IOException when a file cannot be read or the field is malformed (the message names the file and field)
     * @throws ChatTemplateException when the template has a syntax error (the message names the file and line)
     */
    public static Optional<ChatTemplate> load(Path modelDir, Map<String, String> specialTokens) throws IOException {
        Map<String, String> files = templateFiles(modelDir);
        if (!files.isEmpty()) {
            Path jinja = modelDir.resolve(JINJA_FILE);
            String name = files.containsKey(DEFAULT) ? jinja.toString() : modelDir.resolve(MORE_TEMPLATES_DIR).toString();
            return Optional.of(new ChatTemplate(name, files, specialTokens, Clock.systemDefaultZone()));
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

    /** chat_template.jinja as "default" and additional_chat_templates/NAME.jinja as NAME, those present. */
    private static Map<String, String> templateFiles(Path modelDir) throws IOException {
        Map<String, String> out = new LinkedHashMap<>();
        Path jinja = modelDir.resolve(JINJA_FILE);
        if (Files.exists(jinja)) {
            out.put(DEFAULT, JsonFile.readText(jinja));
        }
        Path dir = modelDir.resolve(MORE_TEMPLATES_DIR);
        if (Files.isDirectory(dir)) {
            List<Path> more;
            try (var list = Files.list(dir)) {
                more = list.filter(f -> f.getFileName().toString().endsWith(".jinja")).sorted().toList();
            }
            for (Path f : more) {
                String file = f.getFileName().toString();
                out.putIfAbsent(file.substring(0, file.length() - ".jinja".length()), JsonFile.readText(f));
            }
        }
        return out;
    }

    private static Map<String, String> templateText(JsonFile file, JsonNode field) throws IOException {
        if (field.isTextual()) {
            return Map.of(DEFAULT, field.asText());
        }
        if (!field.isArray()) {
            throw file.fieldError(CONFIG_FIELD, "expected a string or a list of {\"name\", \"template\"}, got "
                    + JsonFile.describe(field));
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 0; i < field.size(); i++) {
            JsonNode entry = field.get(i);
            JsonNode entryName = entry.get("name");
            JsonNode template = entry.get("template");
            if (!entry.isObject() || entryName == null || !entryName.isTextual() || template == null
                    || !template.isTextual()) {
                throw file.fieldError(CONFIG_FIELD + "[" + i + "]", "expected {\"name\": string, \"template\": string}");
            }
            out.put(entryName.asText(), template.asText());
        }
        if (out.isEmpty()) {
            throw file.fieldError(CONFIG_FIELD, "an empty list of named templates");
        }
        return out;
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

    /**
     * The same template with strftime_now reading {@code clock}, for reproducible renders.
     *
     * @param clock the clock strftime_now reads
     * @return the template
     */
    public ChatTemplate withClock(Clock clock) {
        return new ChatTemplate(name, sources, specialTokens, clock);
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
        return JinjaEnvironment.INSTANCE.render(select(variables.get("tools")), variables, clock);
    }

    /**
     * Whether a template names this role as a string literal ({@code 'developer'} or
     * {@code "developer"}): a template that handles a role compares it to its name.
     *
     * @param role a message role
     * @return true when any of the templates has the role's name in quotes
     */
    public boolean namesRole(String role) {
        for (String src : sources.values()) {
            if (src.contains("'" + role + "'") || src.contains("\"" + role + "\"")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The names of the templates.
     *
     * @return the names, "default" for a single one
     */
    public java.util.Set<String> names() {
        return sources.keySet();
    }

    /**
     * transformers' choice among named templates: "tool_use" when tools are given (not None,
     * even an empty list) and the checkpoint has it, else "default".
     */
    private com.hubspot.jinjava.tree.Node select(Object tools) {
        if (tools != null && templates.containsKey(TOOL_USE)) {
            return templates.get(TOOL_USE);
        }
        com.hubspot.jinjava.tree.Node template = templates.get(DEFAULT);
        if (template == null) {
            throw new ChatTemplateException("chat template " + name + ": this model has several chat templates and"
                    + " none named \"default\" (" + String.join(", ", new java.util.TreeSet<>(templates.keySet()))
                    + ")" + (templates.containsKey(TOOL_USE) ? "; \"tool_use\" is used only when tools are given" : ""));
        }
        return template;
    }

    /** Renders with exactly {@code variables} (no special tokens, no defaults), for the Jinja2 comparison tests. */
    String renderVariables(Map<String, Object> variables) {
        Map<String, Object> plain = new HashMap<>();
        variables.forEach((k, v) -> plain.put(k, plain(v)));
        return JinjaEnvironment.INSTANCE.render(select(plain.get("tools")), plain, clock);
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
