package io.phxfs.cli.serve;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix serve MODEL_DIR}: an OpenAI-compatible HTTP server for a Hugging Face
 * checkpoint. This class names no serving, DJL or Jetty type, so that the CLI runs as named
 * modules without them (their modules are static requirements) and picocli's reflection over
 * the commands loads none of them: {@link ApiServer} does the work.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {"Serves a Hugging Face checkpoint (GPT-2 or Llama, with its tokenizer.json) over OpenAI's HTTP"
                        + " API, so that OpenAI's SDKs and curl work unchanged: POST /v1/completions,"
                        + " POST /v1/chat/completions (stream: true as server-sent events), GET /v1/models, GET /health,"
                        + " GET /metrics (Prometheus, phoenix:* series after vLLM's).",
                "Requests are decoded together (continuous batching); past --max-running they wait, past --max-waiting"
                        + " they are answered 429. With --kv-config the prompts' KV is kept in the KV tier (memory, disk,"
                        + " Redis) and reused by later prompts that share a prefix (usage.prompt_tokens_details"
                        + ".cached_tokens).",
                "Prints one line when listening. SIGTERM or Ctrl-C drains: no new requests, those under way finish"
                        + " (for up to a minute), then exit status 0; a second signal exits at once.",
                "Exit status: 0 stopped by a signal; 2 invalid input (no checkpoint, unsupported model, bad --kv-config);"
                        + " 1 other failures (the port taken, say)."})
public final class ServeCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "MODEL_DIR", converter = io.phxfs.cli.ModelPaths.class,
            description = "A Hugging Face checkpoint directory, or s3://BUCKET/PREFIX/ (AWS_ENDPOINT_URL, AWS_REGION,"
                    + " AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE).")
    Path dir;

    @Option(names = "--bind", paramLabel = "ADDRESS", defaultValue = "127.0.0.1",
            description = "The address to listen on (default: ${DEFAULT-VALUE}; 0.0.0.0 for every interface).")
    String bind;

    @Option(names = "--port", paramLabel = "PORT", defaultValue = "8000",
            description = "The TCP port (default: ${DEFAULT-VALUE}; 0 for any free one, printed when listening).")
    int port;

    @Option(names = "--served-model-name", paramLabel = "NAME",
            description = "The name clients give as \"model\" (default: the directory's name).")
    String servedName;

    @Option(names = "--kv-config", paramLabel = "FILE",
            description = "The prefix cache's tiers in LMCache's YAML keys (chunk_size, local_cpu, max_local_cpu_size,"
                    + " local_disk, max_local_disk_size, remote_url, ...); default: no prefix cache.")
    Path kvConfig;

    @Option(names = "--device", paramLabel = "N", description = "The GPU to compute on (default: the CPU).")
    Integer device;

    @Option(names = "--max-running", paramLabel = "N", defaultValue = "8",
            description = "Requests decoded together (default: ${DEFAULT-VALUE}).")
    int maxRunning;

    @Option(names = "--max-waiting", paramLabel = "N", defaultValue = "64",
            description = "Requests queued beyond those before new ones are answered 429 (default: ${DEFAULT-VALUE}).")
    int maxWaiting;

    @Option(names = "--idle-prefix-bytes", paramLabel = "SIZE", defaultValue = "auto",
            description = "Prefix KV kept resident (on the GPU with --device) after the requests that used it end, for the"
                    + " next request with that prefix: a size (4g, 512m), 0 for none, or auto: half of what a full batch"
                    + " at full context needs, at most 4 GiB (default: ${DEFAULT-VALUE}). Idle blocks give way when"
                    + " memory runs out.")
    String idlePrefix;

    @Option(names = "--api-key", paramLabel = "KEY", arity = "1",
            description = "Require `Authorization: Bearer KEY` on every request but /health (and /metrics with"
                    + " --metrics-public); others get 401. Default: the environment's PHOENIX_API_KEY, else none."
                    + " Prefer the environment: a command line is visible to other local users.")
    String apiKey;

    @Option(names = "--metrics-public",
            description = "Serve /metrics without the API key (without this, /metrics needs it when a key is set).")
    boolean metricsPublic;

    @Option(names = "--cache-salt", paramLabel = "SALT",
            description = "A server-wide secret mixed, with each request's cache_salt, into the prefix cache's keys:"
                    + " servers with different salts never share a cached chunk, even on one disk or Redis tier."
                    + " Default: the environment's PHOENIX_CACHE_SALT, else none.")
    String cacheSalt;

    @Option(names = "--max-body-bytes", paramLabel = "SIZE", defaultValue = "8m",
            description = "The largest request body (4m, 8388608); larger ones get 413 (default: ${DEFAULT-VALUE}).")
    String maxBody;

    @Option(names = "--max-connections", paramLabel = "N", defaultValue = "256",
            description = "TCP connections served at once; more wait to be accepted (default: ${DEFAULT-VALUE}).")
    int maxConnections;

    @Option(names = "--idle-timeout", paramLabel = "SECONDS", defaultValue = "60",
            description = "A connection silent this long is closed, never while its generation runs"
                    + " (default: ${DEFAULT-VALUE}).")
    int idleTimeout;

    @Option(names = "--header-timeout", paramLabel = "SECONDS", defaultValue = "10",
            description = "A request whose line and headers take longer to arrive is cut, against clients that"
                    + " dribble them (default: ${DEFAULT-VALUE}).")
    int headerTimeout;

    @Option(names = "--allowed-origins", paramLabel = "ORIGINS",
            description = "Web pages on these origins (https://chat.example.com; comma-separated, or vLLM's JSON list;"
                    + " * for any) may call the server from a browser (CORS): preflights are answered without the API"
                    + " key and answers carry Access-Control-Allow-Origin. Default: none (browsers block cross-origin"
                    + " reads).")
    String allowedOrigins;

    @Option(names = "--allowed-methods", paramLabel = "METHODS",
            description = "With --allowed-origins: the methods a preflight allows (default: GET,POST,HEAD,OPTIONS).")
    String allowedMethods;

    @Option(names = "--allowed-headers", paramLabel = "HEADERS",
            description = "With --allowed-origins: the request headers a preflight allows (default: *, which grants"
                    + " the headers a preflight asks for, Authorization included, as vLLM).")
    String allowedHeaders;

    @Option(names = "--allow-credentials",
            description = "With --allowed-origins (not *): send Access-Control-Allow-Credentials: true.")
    boolean allowCredentials;

    @Option(names = "--enable-auto-tool-choice",
            description = "Serve tool_choice \"auto\" (OpenAI's default when a chat request has tools): the output is"
                    + " parsed for tool calls with --tool-call-parser, as vLLM's flag of that name. Without it a"
                    + " request with tools gets 400 unless its tool_choice is \"none\".")
    boolean autoToolChoice;

    @Option(names = "--tool-call-parser", paramLabel = "NAME",
            description = "The model's tool-call format, with --enable-auto-tool-choice: hermes (<tool_call> blocks:"
                    + " Hermes 2 Pro and 3, Qwen2.5, Qwen3), llama3_json (Llama 3.1 to 3.3 JSON calls), mistral"
                    + " ([TOOL_CALLS]).")
    String toolCallParser;

    @Option(names = "--reasoning-parser", paramLabel = "NAME",
            description = "Split a chat's <think>...</think> reasoning from its answer, as vLLM's flag of that name:"
                    + " the reasoning goes to message.reasoning_content (and message.reasoning), streamed as"
                    + " delta.reasoning_content, the rest to content (tool calls are parsed from the content only)."
                    + " qwen3 (Qwen3: an explicit <think> block at the start; enable_thinking false in"
                    + " chat_template_kwargs: all content) or deepseek_r1 (DeepSeek-R1 and its distills, QwQ: the"
                    + " prompt opens <think>, so all before </think> is reasoning, all of it without one).")
    String reasoningParser;

    @Spec
    CommandSpec spec;

    /** For picocli. */
    public ServeCommand() {
    }

    @Override
    public Integer call() throws Exception {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("--port " + port + ": must be 0 to 65535");
        }
        if (maxRunning < 1) {
            throw new IllegalArgumentException("--max-running " + maxRunning + ": must be at least 1");
        }
        if (maxWaiting < 0) {
            throw new IllegalArgumentException("--max-waiting " + maxWaiting + ": must be at least 0");
        }
        if (device != null && device < 0) {
            throw new IllegalArgumentException("--device " + device + ": must be at least 0");
        }
        // an S3 checkpoint's own errors (403, no such bucket) come from the engine, naming the URL:
        // Files.isDirectory would turn them into a misleading "no such directory"
        if (!io.phxfs.safetensors.s3.S3FileSystemProvider.isS3(dir) && !Files.isDirectory(dir)) {
            if (!Files.exists(dir)) {
                throw new NoSuchFileException(dir.toString(), null, "no such checkpoint directory");
            }
            throw new IllegalArgumentException(dir + ": not a directory (serve takes a checkpoint directory)");
        }
        if (!io.phxfs.safetensors.s3.S3FileSystemProvider.isS3(dir) && !Files.exists(dir.resolve("tokenizer.json"))) {
            // before the weights load: the server turns text into tokens with the checkpoint's own tokenizer
            throw new NoSuchFileException(dir.resolve("tokenizer.json").toString(), null,
                    "serve needs the checkpoint's tokenizer (tokenizer.json, as transformers saves it beside config.json)");
        }
        if (kvConfig != null && !Files.isRegularFile(kvConfig)) {
            if (!Files.exists(kvConfig)) {
                throw new NoSuchFileException(kvConfig.toString(), null, "no such --kv-config file");
            }
            throw new IllegalArgumentException(kvConfig + ": not a file (--kv-config takes LMCache's YAML)");
        }
        String name = servedName;
        if (name == null) {
            Path file = dir.toAbsolutePath().normalize().getFileName();
            name = file == null ? "model" : file.toString();
        }
        if (name.isBlank()) {
            throw new IllegalArgumentException("--served-model-name: must not be empty");
        }
        long idlePrefixBytes;
        try {
            idlePrefixBytes = "auto".equalsIgnoreCase(idlePrefix) ? -1 : io.phxfs.cli.Sizes.parse(idlePrefix);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--idle-prefix-bytes " + idlePrefix + ": " + e.getMessage());
        }
        String key = apiKey != null ? apiKey : System.getenv("PHOENIX_API_KEY");
        if (key != null && key.isBlank()) {
            // never echoed: the key (even a wrong one) is a secret
            throw new IllegalArgumentException("--api-key (or PHOENIX_API_KEY): must not be empty");
        }
        String salt = cacheSalt != null ? cacheSalt : System.getenv("PHOENIX_CACHE_SALT");
        long body;
        try {
            body = io.phxfs.cli.Sizes.parse(maxBody);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--max-body-bytes " + maxBody + ": " + e.getMessage());
        }
        if (body < 1 || body > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException("--max-body-bytes " + maxBody + ": must be 1 byte to 2 GiB");
        }
        if (maxConnections < 1) {
            throw new IllegalArgumentException("--max-connections " + maxConnections + ": must be at least 1");
        }
        if (idleTimeout < 1 || headerTimeout < 1) {
            throw new IllegalArgumentException("--idle-timeout and --header-timeout: must be at least 1 second");
        }
        List<String> origins = list("--allowed-origins", allowedOrigins);
        if (origins.isEmpty() && (allowedMethods != null || allowedHeaders != null || allowCredentials)) {
            throw new IllegalArgumentException("--allowed-methods, --allowed-headers and --allow-credentials take"
                    + " effect with --allowed-origins only");
        }
        CorsPolicy cors = new CorsPolicy(origins, list("--allowed-methods", allowedMethods),
                list("--allowed-headers", allowedHeaders), allowCredentials);
        HttpPolicy policy = HttpPolicy.defaults().withApiKey(key).withMetricsPublic(metricsPublic)
                .withCacheSalt(salt).withLimits((int) body, maxConnections, idleTimeout * 1000L,
                        headerTimeout * 1000L, HttpPolicy.DEFAULT_MAX_HEADER_BYTES).withCors(cors);
        requireServing();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        return ApiServer.run(new ServeOptions(dir, bind, port, name, kvConfig, device, maxRunning, maxWaiting, idlePrefixBytes,
                policy, toolCallParser, autoToolChoice, reasoningParser), out, err);
    }

    /**
     * A flag's list: comma-separated ({@code a,b}), or vLLM's JSON list of strings
     * (<code>["a", "b"]</code>); empty for none.
     */
    static List<String> list(String flag, String value) {
        if (value == null || value.isBlank()) {
            return List.of();
        }
        String v = value.strip();
        if (v.startsWith("[")) {
            if (!v.endsWith("]")) {
                throw new IllegalArgumentException(flag + " " + value + ": a JSON list must end with ]");
            }
            v = v.substring(1, v.length() - 1);
        }
        List<String> out = new ArrayList<>();
        for (String part : v.split(",")) {
            String p = part.strip();
            if (p.length() >= 2 && p.startsWith("\"") && p.endsWith("\"")) {
                p = p.substring(1, p.length() - 1);
            }
            if (!p.isEmpty()) {
                out.add(p);
            }
        }
        return out;
    }

    /** A CLI built without the engine (phoenix-cli-nodjl.jar) says so, instead of a NoClassDefFoundError. */
    static void requireServing() {
        String[] needed = {"ai.djl.engine.Engine", "io.phxfs.serving.engine.GenerationEngine",
            "org.eclipse.jetty.server.Server", "io.prometheus.metrics.core.metrics.Counter",
            "com.fasterxml.jackson.databind.ObjectMapper"};
        for (String c : needed) {
            try {
                Class.forName(c, false, ServeCommand.class.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IllegalStateException("serve needs DJL, phoenix-serving, Jetty and Prometheus' client on the"
                        + " class path (" + c + " is missing); this CLI was built without them"
                        + " (phoenix-cli-nodjl.jar): run samples/target/phoenix-cli.jar");
            }
        }
    }
}
