package io.phxfs.cli.serve;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.phxfs.serving.engine.SamplingParams;
import io.phxfs.serving.guided.OutputGrammar;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bodies of {@code POST /v1/completions} and {@code POST /v1/chat/completions}, read and
 * checked as OpenAI's API does: every field's type, the values this server supports, the
 * defaults. Any fault is an {@link ApiException} naming the field ({@code param}); fields the
 * API has and this server does not need ({@code user}, {@code metadata}, ...) are ignored, those
 * it cannot honour refused ({@link RequestFields}).
 */
final class OpenAiRequests {
    private OpenAiRequests() {
    }

    /** OpenAI's default {@code max_tokens} for completions. */
    static final int DEFAULT_COMPLETION_TOKENS = 16;

    /** Bodies nested deeper, or with longer strings or numbers, than HttpPolicy's caps are a 400. */
    private static final ObjectMapper JSON = JsonMapper.builder(JsonFactory.builder()
                    .streamReadConstraints(StreamReadConstraints.builder()
                            .maxNestingDepth(HttpPolicy.MAX_JSON_DEPTH)
                            .maxStringLength(HttpPolicy.MAX_JSON_STRING)
                            .maxNumberLength(HttpPolicy.MAX_JSON_NUMBER)
                            .maxNameLength(1024)
                            .build())
                    .build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    /** How tokens are chosen; {@code maxTokens} null when the request left it to the server. */
    record Sampling(double temperature, double topP, int topK, Long seed, Integer maxTokens, String maxTokensField,
                    List<String> stop, boolean ignoreEos, SamplingExtras extras) {
        /**
         * The engine's parameters, with {@code maxTokens} where the request had none.
         *
         * @throws ApiException 400 naming the field SamplingParams refused
         */
        SamplingParams params(int defaultMaxTokens) {
            int max = maxTokens != null ? maxTokens : defaultMaxTokens;
            try {
                return extras.apply(new SamplingParams(temperature, topP, topK, seed, max, stop, ignoreEos));
            } catch (IllegalArgumentException e) {
                ApiException a = ApiException.fromEngine(e);
                // max_completion_tokens is the chat field SamplingParams calls max_tokens
                throw "max_tokens".equals(a.param()) ? ApiException.invalid(maxTokensField, a.getMessage()) : a;
            }
        }
    }

    /**
     * A completion request.
     *
     * @param text the prompt as text, or null when given as token ids
     * @param ids the prompt as token ids, or null when given as text
     * @param format what {@code response_format} guides the output to, or null for free text
     */
    record Completion(String text, int[] ids, Sampling sampling, boolean stream, boolean includeUsage,
                      String cacheSalt, OutputGrammar format) {
    }

    /**
     * A chat completion request.
     *
     * @param messages the conversation as the chat template takes it: maps of role, content (text)
     *        and whatever else the client sent (name, tool_call_id) as plain Java values, an
     *        assistant's tool_calls with their arguments parsed (see {@link ToolRequests})
     * @param templateKwargs vLLM's {@code chat_template_kwargs}: more variables for the template
     *        ({@code enable_thinking}, ...), empty when none
     * @param tools {@code tools}, {@code tool_choice} and {@code parallel_tool_calls}
     * @param format what {@code response_format} guides the output to, or null for free text
     */
    record Chat(List<Map<String, Object>> messages, Sampling sampling, boolean stream, boolean includeUsage,
                String cacheSalt, Map<String, Object> templateKwargs, ToolRequests.Tools tools, OutputGrammar format) {
    }

    /**
     * The body as a JSON object.
     *
     * @throws ApiException 400 for an empty body, malformed JSON or JSON that is not an object
     */
    static ObjectNode parse(byte[] body) {
        if (body.length == 0) {
            throw ApiException.invalid(null, "The request body is empty; expected a JSON object.");
        }
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JacksonException e) {
            String why = e.getOriginalMessage() == null ? e.getMessage() : e.getOriginalMessage();
            String where = e.getLocation() == null ? ""
                    : " (line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr() + ")";
            throw ApiException.invalid(null, "We could not parse the JSON body of your request: "
                    + why.lines().findFirst().orElse("") + where);
        } catch (java.io.IOException e) {
            throw ApiException.invalid(null, "We could not parse the JSON body of your request: " + e.getMessage());
        }
        if (root == null || root.isMissingNode()) {
            throw ApiException.invalid(null, "The request body is empty; expected a JSON object.");
        }
        if (!(root instanceof ObjectNode o)) {
            throw ApiException.invalid(null, "The request body must be a JSON object, not " + kind(root) + ".");
        }
        return o;
    }

    /**
     * Checks {@code model} against the served name.
     *
     * @throws ApiException 400 when missing or not a string, 404 (model_not_found) when another model
     */
    static void checkModel(ObjectNode body, String served) {
        JsonNode m = body.get("model");
        if (m == null || m.isNull()) {
            throw ApiException.invalid("model", "you must provide a model parameter");
        }
        if (!m.isTextual()) {
            throw ApiException.invalid("model", "model must be a string, not " + kind(m));
        }
        if (!m.textValue().equals(served)) {
            throw new ApiException(404, ApiException.INVALID_REQUEST, "The model `" + m.textValue()
                    + "` does not exist. This server serves `" + served + "`.", "model", "model_not_found");
        }
    }

    /** {@code POST /v1/completions}. */
    static Completion completion(ObjectNode body) {
        JsonNode p = body.get("prompt");
        String text = null;
        int[] ids = null;
        if (p == null || p.isNull()) {
            throw ApiException.invalid("prompt", "prompt: required (a string, or a list of token ids)");
        } else if (p.isTextual()) {
            text = p.textValue();
        } else if (p.isArray()) {
            if (p.isEmpty()) {
                throw ApiException.invalid("prompt", "prompt: an empty list; give a string or at least one token id");
            }
            if (p.get(0).isTextual() || p.get(0).isArray()) {
                // a batch: OpenAI takes several prompts; this server one per request
                if (p.size() > 1) {
                    throw ApiException.invalid("prompt", "prompt: a batch of " + p.size()
                            + " prompts; this server takes one prompt per request");
                }
                JsonNode only = p.get(0);
                if (only.isTextual()) {
                    text = only.textValue();
                } else {
                    ids = tokenIds(only, "prompt[0]");
                }
            } else {
                ids = tokenIds(p, "prompt");
            }
        } else {
            throw ApiException.invalid("prompt", "prompt must be a string or a list of token ids, not " + kind(p));
        }
        Sampling s = sampling(body, false);
        rejectUnless(body, "echo", n -> n.isBoolean() && !n.booleanValue(), "echo: only false is supported");
        rejectUnless(body, "logprobs", n -> false, "logprobs: not supported; leave it out or null");
        rejectUnless(body, "best_of", n -> n.canConvertToExactIntegral() && n.asInt() == 1,
                "best_of: only 1 is supported");
        rejectUnless(body, "suffix", n -> false, "suffix: not supported");
        boolean stream = stream(body);
        return new Completion(text, ids, s, stream, includeUsage(body, stream), cacheSalt(body), ResponseFormats.read(body));
    }

    /** {@code POST /v1/chat/completions}. */
    static Chat chat(ObjectNode body) {
        JsonNode ms = body.get("messages");
        if (ms == null || ms.isNull()) {
            throw ApiException.invalid("messages", "messages: required (a list of {role, content})");
        }
        if (!ms.isArray()) {
            throw ApiException.invalid("messages", "messages must be a list, not " + kind(ms));
        }
        if (ms.isEmpty()) {
            throw ApiException.invalid("messages", "messages: an empty list; at least one message is needed");
        }
        List<Map<String, Object>> messages = new ArrayList<>(ms.size());
        for (int i = 0; i < ms.size(); i++) {
            messages.add(message(ms.get(i), "messages[" + i + "]"));
        }
        Sampling s = sampling(body, true);
        rejectUnless(body, "logprobs", n -> n.isBoolean() && !n.booleanValue(), "logprobs: not supported; leave it out or false");
        rejectUnless(body, "top_logprobs", n -> false, "top_logprobs: not supported");
        ToolRequests.Tools tools = ToolRequests.read(body);
        OutputGrammar format = ResponseFormats.read(body);
        if (format != null && (tools.choice() == ToolRequests.Choice.REQUIRED || tools.choice() == ToolRequests.Choice.NAMED)) {
            throw ApiException.invalid("response_format", "response_format (or vLLM's structured_outputs / guided_*) and"
                    + " tool_choice \"required\" or a named function both decide the output; send one of them");
        }
        boolean stream = stream(body);
        return new Chat(messages, s, stream, includeUsage(body, stream), cacheSalt(body), templateKwargs(body), tools, format);
    }

    /**
     * vLLM's {@code chat_template_kwargs} (what clients send for {@code enable_thinking: false},
     * say): an object whose entries become template variables, after {@code reasoning_effort}. The variables this server sets
     * from the request itself ({@code messages}, {@code add_generation_prompt}) are not taken.
     */
    private static Map<String, Object> templateKwargs(ObjectNode body) {
        Map<String, Object> out = new LinkedHashMap<>();
        // OpenAI's reasoning_effort, a variable of the templates of reasoning models (gpt-oss'), as vLLM passes it
        JsonNode effort = body.get("reasoning_effort");
        if (effort != null && !effort.isNull()) {
            if (!effort.isTextual()) {
                throw ApiException.invalid("reasoning_effort", "reasoning_effort must be a string (low, medium, high),"
                        + " not " + kind(effort));
            }
            out.put("reasoning_effort", effort.textValue());
        }
        JsonNode k = body.get("chat_template_kwargs");
        if (k == null || k.isNull()) {
            return out;
        }
        if (!k.isObject()) {
            throw ApiException.invalid("chat_template_kwargs", "chat_template_kwargs must be an object, not "
                    + kind(k));
        }
        for (var e : k.properties()) {
            if (e.getKey().equals("messages") || e.getKey().equals("add_generation_prompt")) {
                throw ApiException.invalid("chat_template_kwargs", "chat_template_kwargs." + e.getKey()
                        + ": set by the request itself, not a template argument");
            }
            out.put(e.getKey(), JSON.convertValue(e.getValue(), Object.class));
        }
        return out;
    }

    private static Map<String, Object> message(JsonNode m, String where) {
        if (!m.isObject()) {
            throw ApiException.invalid("messages", where + " must be an object {role, content}, not " + kind(m));
        }
        JsonNode role = m.get("role");
        if (role == null || role.isNull()) {
            throw ApiException.invalid("messages", where + ".role: required");
        }
        if (!role.isTextual()) {
            throw ApiException.invalid("messages", where + ".role must be a string, not " + kind(role));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (var e : m.properties()) {
            out.put(e.getKey(), JSON.convertValue(e.getValue(), Object.class));
        }
        JsonNode c = m.get("content");
        String content;
        if (c == null || c.isNull()) {
            content = ""; // an assistant turn that called tools has none
        } else if (c.isTextual()) {
            content = c.textValue();
        } else if (c.isArray()) {
            // text parts joined by newlines, as vLLM does for templates that take a string
            List<String> texts = new ArrayList<>();
            for (int j = 0; j < c.size(); j++) {
                JsonNode part = c.get(j);
                String pw = where + ".content[" + j + "]";
                if (!part.isObject()) {
                    throw ApiException.invalid("messages", pw + " must be an object {type, text}, not " + kind(part));
                }
                String type = part.path("type").asText(null);
                if (!"text".equals(type)) {
                    throw ApiException.invalid("messages", pw + ": only parts of type \"text\" are supported, not "
                            + (type == null ? "a part without a type" : "\"" + type + "\""));
                }
                JsonNode t = part.get("text");
                if (t == null || !t.isTextual()) {
                    throw ApiException.invalid("messages", pw + ".text must be a string");
                }
                texts.add(t.textValue());
            }
            content = String.join("\n", texts);
        } else {
            throw ApiException.invalid("messages", where + ".content must be a string or a list of text parts, not "
                    + kind(c));
        }
        out.put("content", content);
        JsonNode calls = m.get("tool_calls");
        if (calls != null && !calls.isNull() && role.textValue().equals("assistant")) {
            out.put("tool_calls", ToolRequests.assistantCalls(calls, where));
        }
        return out;
    }

    private static Sampling sampling(ObjectNode body, boolean chat) {
        double temperature = BodyFields.number(body, "temperature", 1.0);
        double topP = BodyFields.number(body, "top_p", 1.0);
        Integer topK = integer(body, "top_k");
        if (topK != null && topK == -1) {
            topK = 0; // vLLM's "no limit"
        }
        Long seed = longInteger(body, "seed");
        String field = "max_tokens";
        Integer max = integer(body, "max_tokens");
        if (chat) {
            Integer mct = integer(body, "max_completion_tokens");
            if (mct != null) {
                max = mct;
                field = "max_completion_tokens";
            }
        }
        if (max != null && max < 1) {
            throw ApiException.invalid(field, field + ": " + max + " must be at least 1");
        }
        rejectUnless(body, "n", n -> n.canConvertToExactIntegral() && n.asInt() == 1, "n: only 1 is supported");
        RequestFields.refuseUnsupported(body);
        JsonNode ie = body.get("ignore_eos");
        boolean ignoreEos = false;
        if (ie != null && !ie.isNull()) {
            if (!ie.isBoolean()) {
                throw ApiException.invalid("ignore_eos", "ignore_eos must be a boolean, not " + kind(ie));
            }
            ignoreEos = ie.booleanValue();
        }
        Sampling s = new Sampling(temperature, topP, topK == null ? 0 : topK, seed, max, field, stop(body), ignoreEos,
                SamplingExtras.read(body));
        // SamplingParams' own checks now, before anything is tokenized
        s.params(Math.max(1, s.extras().minTokens()));
        return s;
    }

    private static List<String> stop(ObjectNode body) {
        JsonNode s = body.get("stop");
        if (s == null || s.isNull()) {
            return List.of();
        }
        if (s.isTextual()) {
            return List.of(s.textValue());
        }
        if (!s.isArray()) {
            throw ApiException.invalid("stop", "stop must be a string or a list of strings, not " + kind(s));
        }
        List<String> out = new ArrayList<>();
        for (JsonNode e : s) {
            if (!e.isTextual()) {
                throw ApiException.invalid("stop", "stop must be a string or a list of strings; found " + kind(e));
            }
            out.add(e.textValue());
        }
        return out;
    }

    private static boolean stream(ObjectNode body) {
        JsonNode s = body.get("stream");
        if (s == null || s.isNull()) {
            return false;
        }
        if (!s.isBoolean()) {
            throw ApiException.invalid("stream", "stream must be a boolean, not " + kind(s));
        }
        return s.booleanValue();
    }

    private static boolean includeUsage(ObjectNode body, boolean stream) {
        JsonNode o = body.get("stream_options");
        if (o == null || o.isNull()) {
            return false;
        }
        if (!stream) {
            throw ApiException.invalid("stream_options", "stream_options: only allowed when stream is true");
        }
        if (!o.isObject()) {
            throw ApiException.invalid("stream_options", "stream_options must be an object, not " + kind(o));
        }
        JsonNode u = o.get("include_usage");
        if (u == null || u.isNull()) {
            return false;
        }
        if (!u.isBoolean()) {
            throw ApiException.invalid("stream_options", "stream_options.include_usage must be a boolean, not " + kind(u));
        }
        return u.booleanValue();
    }

    private static String cacheSalt(ObjectNode body) {
        JsonNode s = body.get("cache_salt");
        if (s == null || s.isNull()) {
            return null;
        }
        if (!s.isTextual()) {
            throw ApiException.invalid("cache_salt", "cache_salt must be a string, not " + kind(s));
        }
        return s.textValue().isEmpty() ? null : s.textValue();
    }

    private static int[] tokenIds(JsonNode list, String field) {
        int[] ids = new int[list.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode e = list.get(i);
            if (!e.isIntegralNumber()) {
                throw ApiException.invalid("prompt", field + " must be a string or a list of token ids (integers); "
                        + field + "[" + i + "] is " + kind(e));
            }
            if (!e.canConvertToInt()) {
                throw ApiException.invalid("prompt", field + "[" + i + "]: token id " + e.asText()
                        + " is outside the vocabulary");
            }
            ids[i] = e.intValue();
        }
        if (ids.length == 0) {
            throw ApiException.invalid("prompt", field + ": an empty list of token ids");
        }
        return ids;
    }

    private static Integer integer(ObjectNode body, String field) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return null;
        }
        // 16.0 is an integer, as Python's (and OpenAI's) validation takes it; "16" and 16.5 are not
        if (!n.isNumber() || !n.canConvertToExactIntegral()) {
            throw ApiException.invalid(field, field + " must be an integer, not " + kind(n));
        }
        if (!n.canConvertToInt()) {
            throw ApiException.invalid(field, field + ": " + n.asText() + " is out of range");
        }
        return n.asInt();
    }

    private static Long longInteger(ObjectNode body, String field) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isNumber() || !n.canConvertToExactIntegral()) {
            throw ApiException.invalid(field, field + " must be an integer, not " + kind(n));
        }
        if (!n.canConvertToLong()) {
            throw ApiException.invalid(field, field + ": " + n.asText() + " is out of range");
        }
        return n.asLong();
    }

    /** 400 when the field is present, not null and fails the test. */
    private static void rejectUnless(ObjectNode body, String field, java.util.function.Predicate<JsonNode> ok,
                                     String message) {
        JsonNode n = body.get(field);
        if (n != null && !n.isNull() && !ok.test(n)) {
            throw ApiException.invalid(field, message);
        }
    }

    /** A JSON value's kind in words, for messages: "a string (\"16\")", "a boolean", ... */
    static String kind(JsonNode n) {
        return switch (n.getNodeType()) {
            case STRING -> "a string (" + abbreviate(n.toString()) + ")";
            case NUMBER -> "a number (" + n.asText() + ")";
            case BOOLEAN -> "a boolean (" + n.asText() + ")";
            case ARRAY -> "a list";
            case OBJECT -> "an object";
            case NULL -> "null";
            default -> n.getNodeType().toString().toLowerCase(java.util.Locale.ROOT);
        };
    }

    private static String abbreviate(String s) {
        return s.length() <= 40 ? s : s.substring(0, 37) + "...";
    }
}
