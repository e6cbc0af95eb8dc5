package io.phxfs.serving.engine;

import ai.djl.MalformedModelException;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ModelNotFoundException;
import ai.djl.repository.zoo.ZooModel;
import io.phxfs.djl.CausalLmBlock;
import io.phxfs.djl.DjlRuntime;
import io.phxfs.kvcache.KvLayout;
import io.phxfs.kvcache.KvMetrics;
import io.phxfs.serving.text.ChatTemplate;
import io.phxfs.serving.guided.Guide;
import io.phxfs.serving.guided.GuidedVocabulary;
import io.phxfs.serving.text.HfTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;

/**
 * Serves one checkpoint: requests in token ids, text out, with continuous batching, sampling
 * and prefix KV reuse through kvcache-tier. The API server's one dependency: it tokenizes and
 * renders chat templates with {@link #tokenizer()} and {@link #chatTemplate()}, then
 * {@link #submit}s.
 *
 * <pre>{@code
 * try (GenerationEngine engine = GenerationEngine.open(EngineConfig.of(Path.of("models/llama")))) {
 *     int[] ids = engine.tokenizer().encode("The capital of France is", true);
 *     engine.submit(new GenerationRequest("r1", ids, SamplingParams.greedy(16), null), listener);
 * }
 * }</pre>
 */
public final class GenerationEngine implements AutoCloseable {
    private final EngineConfig config;
    private final ZooModel<long[], float[][]> model;
    private final CausalLmBlock block;
    private final HfTokenizer tokenizer;
    private final ChatTemplate template;
    private final PrefixCache prefix;
    private final Scheduler scheduler;
    private final Thread thread;
    private final ModelCard card;
    private final CheckpointFiles files;
    private volatile boolean closed;

    private GenerationEngine(EngineConfig config, ZooModel<long[], float[][]> model, HfTokenizer tokenizer,
                             ChatTemplate template, String identity, Set<Integer> eos, CheckpointFiles files) {
        this.config = config;
        this.files = files;
        this.model = model;
        this.block = (CausalLmBlock) model.getBlock();
        this.tokenizer = tokenizer;
        this.template = template;
        KvLayout layout = new KvLayout(block.layers(), block.kvHeads(), block.headDim(), kvDtype(block.dtype()),
                KvLayout.Kind.KV_2LTD);
        this.prefix = config.kvCache() == null ? null : new PrefixCache(config.kvCache(), layout, identity);
        this.card = new ModelCard(config.modelDir(), block.config().modelType(), block.contextLength(), block.vocabSize(),
                identity, System.currentTimeMillis() / 1000);
        this.scheduler = new Scheduler(block, model.getNDManager(), tokenizer, eos, prefix, layout, config);
        this.thread = Thread.ofPlatform().name("phoenix-engine").daemon(false).start(scheduler);
    }

    private static KvLayout.DType kvDtype(ai.djl.ndarray.types.DataType t) {
        return switch (t) {
            case FLOAT32 -> KvLayout.DType.FLOAT32;
            case FLOAT16 -> KvLayout.DType.FLOAT16;
            case BFLOAT16 -> KvLayout.DType.BFLOAT16;
            default -> throw new IllegalArgumentException("KV cache dtype " + t);
        };
    }

    /**
     * Loads the checkpoint (weights through Phoenix into DJL, the tokenizer, the chat template)
     * and starts the engine's thread. {@code modelDir} may be an S3 path
     * ({@code S3FileSystemProvider.pathOf("s3://bucket/prefix/")}): its small files are copied
     * into a private temporary directory for the tokenizer and the template ({@code CheckpointFiles},
     * deleted at close), its weights load from S3 through a {@code phoenix:s3://} model URL.
     *
     * @param config what to serve
     * @return the running engine; close it
     * @throws IOException when a file cannot be read; the message names it
     * @throws IllegalArgumentException for a checkpoint the engine cannot serve (no tokenizer.json,
     *         an unsupported model type, a malformed file)
     * @throws IllegalStateException for a device the libtorch DJL loaded cannot compute on (a CPU-only build)
     */
    public static GenerationEngine open(EngineConfig config) throws IOException {
        Path dir = config.modelDir().toAbsolutePath().normalize();
        if (!CheckpointFiles.isRemote(dir) && !Files.isDirectory(dir)) {
            if (Files.exists(dir)) {
                throw new IllegalArgumentException(dir + ": not a directory (serve takes a checkpoint directory)");
            }
            throw new NoSuchFileException(dir.toString(), null, "no such checkpoint directory");
        }
        if (config.device() != null && config.device() < 0) {
            throw new IllegalArgumentException("device " + config.device() + ": a GPU index >= 0");
        }
        // DJL's tokenizer pings a usage-tracking endpoint at first use unless told not to: a
        // server must not reach out (and a closed network would stall its start)
        if (System.getenv("OPT_OUT_TRACKING") == null && System.getProperty("OPT_OUT_TRACKING") == null) {
            System.setProperty("OPT_OUT_TRACKING", "true");
        }
        CheckpointFiles files = CheckpointFiles.open(dir); // the small files, local (a copy of an S3 checkpoint's)
        HfTokenizer tokenizer;
        try {
            tokenizer = HfTokenizer.open(files.dir());
        } catch (IOException e) {
            files.close();
            throw files.named(e);
        } catch (RuntimeException e) {
            files.close();
            throw files.named(e);
        }
        try {
            Path local = files.dir();
            ChatTemplate template = ChatTemplate.load(local, tokenizer.specialTokens()).orElse(null);
            Set<Integer> eos = StopTokens.of(local, tokenizer);
            String identity = ModelIdentity.of(local, dir);
            DjlRuntime.preferOffline();
            DjlRuntime.pytorch();
            // on a GPU: weights straight into its memory, computed in the checkpoint's dtype, the
            // KV cache in its memory too
            Criteria.Builder<long[], float[][]> builder = Criteria.builder().setTypes(long[].class, float[][].class)
                    .optModelUrls(files.modelUrl());
            if (CheckpointFiles.isRemote(dir)) {
                // phoenix:s3://...: the weights straight from the bucket, through this very path's file system
                builder = builder.optArgument(io.phxfs.djl.PhoenixBlockFactory.CHECKPOINT, dir);
            }
            Criteria<long[], float[][]> criteria = builder
                    .optDevice(config.device() == null ? ai.djl.Device.cpu() : ai.djl.Device.gpu(config.device())).build();
            ZooModel<long[], float[][]> model;
            try {
                model = criteria.loadModel();
            } catch (ModelNotFoundException | MalformedModelException e) {
                throw new IllegalArgumentException(dir + ": " + e.getMessage(), e);
            }
            if (!(model.getBlock() instanceof CausalLmBlock)) {
                model.close();
                throw new IllegalArgumentException(dir + ": not a causal language model the engine can run");
            }
            warnAboutIgnoredSettings(local);
            try {
                return new GenerationEngine(config, model, tokenizer, template, identity, eos, files);
            } catch (RuntimeException e) {
                model.close(); // a tier that refused its directory, say
                throw e;
            }
        } catch (IOException e) {
            tokenizer.close();
            files.close();
            throw files.named(e);
        } catch (RuntimeException e) {
            tokenizer.close();
            files.close();
            throw files.named(e);
        }
    }

    /**
     * generation_config.json's logits processors change transformers' greedy output too; the
     * engine applies none of them yet, so it says so rather than differ silently.
     */
    private static void warnAboutIgnoredSettings(Path dir) throws IOException {
        Path f = dir.resolve("generation_config.json");
        if (!Files.isRegularFile(f)) {
            return;
        }
        com.fasterxml.jackson.databind.JsonNode g = new com.fasterxml.jackson.databind.ObjectMapper().readTree(f.toFile());
        java.util.List<String> ignored = new java.util.ArrayList<>();
        if (g.path("repetition_penalty").asDouble(1) != 1) {
            ignored.add("repetition_penalty");
        }
        for (String k : new String[] {"no_repeat_ngram_size", "min_new_tokens", "min_length", "suppress_tokens",
                "begin_suppress_tokens", "bad_words_ids"}) {
            com.fasterxml.jackson.databind.JsonNode v = g.path(k);
            if (!v.isMissingNode() && !v.isNull() && !(v.isNumber() && v.asInt() == 0) && !(v.isArray() && v.isEmpty())) {
                ignored.add(k);
            }
        }
        if (!ignored.isEmpty()) {
            System.err.println("phoenix serve: warning: " + f + " sets " + String.join(", ", ignored)
                    + ", which this engine does not apply: outputs may differ from transformers' generate");
        }
    }

    /**
     * What is served.
     *
     * @return the model's card
     */
    public ModelCard model() {
        return card;
    }

    /**
     * The checkpoint's tokenizer.
     *
     * @return the tokenizer (owned by the engine)
     */
    public HfTokenizer tokenizer() {
        return tokenizer;
    }

    /**
     * The checkpoint's chat template, if it has one.
     *
     * @return the template
     */
    public Optional<ChatTemplate> chatTemplate() {
        return Optional.ofNullable(template);
    }

    /**
     * Queues a request; the listener hears of it on the engine's thread.
     *
     * @param request the prompt and how to continue it
     * @param listener where its text and end go
     * @return the request's handle, to cancel it
     * @throws QueueFullException when as many requests run and wait as the configuration allows
     * @throws IllegalArgumentException when the prompt and max_tokens do not fit the context, or an id is outside the vocabulary
     * @throws IllegalStateException after {@link #close}
     */
    public GenerationHandle submit(GenerationRequest request, GenerationListener listener) {
        if (closed) {
            throw new IllegalStateException("the engine is closed");
        }
        int[] ids = request.promptIds();
        int vocab = block.vocabSize();
        for (int id : ids) {
            if (id < 0 || id >= vocab) {
                throw new IllegalArgumentException("prompt: token id " + id + " is outside the vocabulary [0, " + vocab + ")");
            }
        }
        int max = request.sampling().maxTokens();
        if ((long) ids.length + max > card.contextLength()) {
            throw new IllegalArgumentException("prompt: " + ids.length + " tokens plus max_tokens " + max + " is "
                    + ((long) ids.length + max) + ", past the model's context of " + card.contextLength()
                    + " tokens; shorten the prompt or lower max_tokens");
        }
        Guide guide = request.guide() == null ? null : new Guide(guidedVocabulary(), request.guide(),
                request.reasoning());
        Sequence s = new Sequence(request, java.util.Objects.requireNonNull(listener, "listener"), guide);
        scheduler.submit(s);
        return s;
    }

    /** The vocabulary trie of guided requests, built at the first one (a walk of the whole vocabulary). */
    private GuidedVocabulary guidedVocabulary() {
        GuidedVocabulary v = guided;
        if (v == null) {
            synchronized (this) {
                v = guided;
                if (v == null) {
                    v = GuidedVocabulary.of(tokenizer, block.vocabSize());
                    guided = v;
                }
            }
        }
        return v;
    }

    private volatile GuidedVocabulary guided;

    /**
     * Whether the engine serves: false once its thread has stopped on an unexpected error (every
     * request then fails at once instead of waiting forever) or it was closed.
     *
     * @return true while requests can be served
     */
    public boolean healthy() {
        return !closed && scheduler.fatal() == null;
    }

    /**
     * Requests in the running batch.
     *
     * @return how many are being decoded
     */
    public int running() {
        return scheduler.running();
    }

    /**
     * Requests queued behind the batch.
     *
     * @return how many wait
     */
    public int waiting() {
        return scheduler.waiting();
    }

    /**
     * The prefix cache's counters, when there is one.
     *
     * @return the KV tier's metrics
     */
    public Optional<KvMetrics> tierMetrics() {
        return prefix == null ? Optional.empty() : Optional.of(prefix.metrics());
    }

    /** Shared prefixes: resident now, filled, joined (tests; read once the requests have ended). */
    long[] sharedPrefixCountsForTest() {
        return scheduler.sharedPrefixCounts();
    }

    /**
     * The configuration the engine runs with.
     *
     * @return the configuration
     */
    public EngineConfig config() {
        return config;
    }

    /**
     * Drains and stops: refuses new requests, finishes the queued and running ones, then frees
     * the caches, the KV tier (its write-behind flushed), the model and the tokenizer. Calling
     * it again does nothing.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        scheduler.shutdown();
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        try {
            if (prefix != null) {
                prefix.close();
            }
        } finally {
            scheduler.releaseMemory();
            model.close();
            tokenizer.close();
            files.close();
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
