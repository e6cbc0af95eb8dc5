package io.phxfs.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.phxfs.safetensors.Dtype;
import io.phxfs.safetensors.ModelFiles;
import io.phxfs.safetensors.SafetensorsWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code phoenix gen-model DIR --size 4g [--shards N] [--experts N]}: a bf16 model with Llama's
 * tensor names and shapes (as many layers as fit the size) and random weights, written without
 * Python, for loading benchmarks on machines that have none of the reference tools. With
 * {@code --experts N} each layer's MLP is a mixture of N small experts (1 MiB matrices by
 * default): the many-tensor shape of Mixtral, Qwen-MoE and DeepSeek checkpoints.
 */
@Command(name = "gen-model", mixinStandardHelpOptions = true,
        description = "Writes a bf16 safetensors model with Llama-like tensors (or mixture-of-experts layers) and random weights (benchmark input).")
final class GenModelCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "DIR", description = "Directory to write model.safetensors (or the shards and index) into.")
    Path dir;

    @Option(names = "--size", defaultValue = "4g", converter = Sizes.Converter.class, description = "Target size; layers are added while they fit (default: ${DEFAULT-VALUE}).")
    long size;

    @Option(names = "--shards", defaultValue = "1", description = "Number of shard files; >1 also writes model.safetensors.index.json (default: ${DEFAULT-VALUE}).")
    int shards;

    @Option(names = "--hidden", defaultValue = "4096", description = "Hidden size (default: ${DEFAULT-VALUE}).")
    long hidden;

    @Option(names = "--intermediate", defaultValue = "14336", description = "MLP size (default: ${DEFAULT-VALUE}).")
    long intermediate;

    @Option(names = "--vocab", defaultValue = "32000", description = "Vocabulary size (default: ${DEFAULT-VALUE}).")
    long vocab;

    @Option(names = "--heads", defaultValue = "32", description = "Attention heads (default: ${DEFAULT-VALUE}).")
    long heads;

    @Option(names = "--kv-heads", defaultValue = "8", description = "Key/value heads (default: ${DEFAULT-VALUE}).")
    long kvHeads;

    @Option(names = "--seed", defaultValue = "1", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--experts", defaultValue = "0", paramLabel = "N", description = {
            "Mixture-of-experts layers: each layer's MLP becomes a router (mlp.gate.weight) and N experts"
                    + " (mlp.experts.E.{gate,up,down}_proj.weight), as Qwen-MoE and DeepSeek name them: thousands"
                    + " of small tensors (default: ${DEFAULT-VALUE}, a dense Llama MLP)."})
    int experts;

    @Option(names = "--dtype", defaultValue = "bf16", paramLabel = "bf16|f32", description = {
            "Weight type (default: ${DEFAULT-VALUE}). f32 weights are drawn from a normal distribution (std 0.02, norms 1),"
                    + " so that the model computes sensibly (phoenix serve, djl-run); bf16 weights are random bytes, for"
                    + " loading benchmarks."})
    String dtype;

    @Option(names = "--context", defaultValue = "2048", paramLabel = "N",
            description = "max_position_embeddings written to config.json (default: ${DEFAULT-VALUE}).")
    int context;

    @Option(names = "--tokenizer", paramLabel = "DIR", description = {
            "Copy tokenizer.json, tokenizer_config.json, chat_template.jinja and special_tokens_map.json (those present)"
                    + " from DIR: with config.json, a checkpoint phoenix serve runs. Every id of the tokenizer must be below --vocab."})
    Path tokenizer;

    @Option(names = "--expert-intermediate", paramLabel = "N", description = {
            "MLP size of one expert (default with --experts: 1 MiB of bf16 per expert matrix, 512 for --hidden 1024,"
                    + " 128 for 4096)."})
    Long expertIntermediate;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        long target = size;
        if (hidden < 1 || intermediate < 1 || vocab < 1 || heads < 1 || kvHeads < 1 || hidden % heads != 0
                || heads % kvHeads != 0) {
            throw new IllegalArgumentException("dimensions: --hidden must divide by --heads, --heads by --kv-heads, all > 0");
        }
        if (experts < 0) {
            throw new IllegalArgumentException("--experts must be >= 0, was " + experts);
        }
        if (expertIntermediate != null && (expertIntermediate < 1 || experts == 0)) {
            throw new IllegalArgumentException(experts == 0 ? "--expert-intermediate needs --experts N"
                    : "--expert-intermediate must be > 0, was " + expertIntermediate);
        }
        Dtype weightType = switch (dtype.toLowerCase(java.util.Locale.ROOT)) {
            case "bf16", "bfloat16" -> Dtype.BF16;
            case "f32", "float32", "fp32" -> Dtype.F32;
            default -> throw new IllegalArgumentException("--dtype " + dtype + ": use bf16 or f32");
        };
        this.type = weightType;
        if (context < 1) {
            throw new IllegalArgumentException("--context " + context + ": must be >= 1");
        }
        if (tokenizer != null) {
            checkTokenizer(tokenizer, vocab);
        }
        List<SafetensorsWriter.Spec> tensors = layout(target);
        if (shards < 1 || shards > tensors.size()) {
            throw new IllegalArgumentException("--shards must be in 1.." + tensors.size() + ", was " + shards);
        }
        // DIR and any missing parents: removed again by a failed or interrupted run if left empty
        List<Path> made = TempFiles.createDirectories(dir, Thread.currentThread());
        PrintWriter out = spec.commandLine().getOut();
        // every file is written into a staging directory inside DIR and moved into place only once
        // all are whole: an interrupted or failed run leaves DIR as it found it (a checkpoint already
        // there included), never half of one model over another
        Path staging;
        try {
            staging = TempFiles.track(Files.createTempDirectory(dir, ".gen-model-"), Thread.currentThread());
        } catch (IOException e) {
            TempFiles.removeMade(made);
            throw io.phxfs.core.FileOperationException.of("create", dir, e);
        }
        List<String> names = new ArrayList<>();
        List<List<SafetensorsWriter.Spec>> parts;
        long total = 0;
        long bytes = 0;
        try {
            parts = split(tensors, shards);
            byte[] random = new byte[32 << 20];
            fillRandom(random, seed);
            Map<String, String> weightMap = new TreeMap<>();
            for (int i = 0; i < parts.size(); i++) {
                String name = parts.size() == 1 ? ModelFiles.SINGLE_FILE
                        : String.format("model-%05d-of-%05d.safetensors", i + 1, parts.size());
                names.add(name);
                long fileBytes = SafetensorsWriter.write(staging.resolve(name), Map.of("format", "pt"), parts.get(i),
                        type == Dtype.F32 ? (t, off, dst) -> fillNormal(t, off, dst, seed) : (t, off, dst) -> fill(random, t, off, dst));
                bytes += fileBytes;
                for (SafetensorsWriter.Spec t : parts.get(i)) {
                    weightMap.put(t.name(), name);
                    total += t.nbytes();
                }
                // written, not yet in place: every file moves into DIR at the end
                spec.commandLine().getErr().printf("phoenix gen-model: wrote %s (%d tensors, %s)%n", name,
                        parts.get(i).size(), LoadCommand.human(fileBytes));
            }
            if (parts.size() > 1) {
                names.add(ModelFiles.INDEX_FILE);
                writeIndex(staging.resolve(ModelFiles.INDEX_FILE), total, weightMap);
            }
            if (experts == 0) {
                // config.json (and the tokenizer's files): a checkpoint the DJL blocks and serve run
                names.addAll(writeConfig(staging, layers(tensors)));
            }
            // from here a Ctrl-C must not delete the old checkpoint's files, which the commit
            // moves into the staging directory: it would rather leave that directory behind
            TempFiles.untrack(staging);
            List<String> removed = commit(staging, dir, names);
            if (!removed.isEmpty()) {
                spec.commandLine().getErr().printf("phoenix gen-model: removed %s of the checkpoint %s held before%n",
                        String.join(", ", removed), dir);
            }
            TempFiles.delete(staging);
            made.forEach(TempFiles::untrack);
        } catch (IOException | RuntimeException e) {
            // a failed run (ENOSPC, say) leaves nothing of its own behind: neither its files nor
            // the directories it made (those left empty)
            TempFiles.delete(staging);
            TempFiles.removeMade(made);
            throw e;
        }
        long layers = layers(tensors);
        out.printf("%s: %d layer%s, %d tensors, %s of weights (--size %s) in %d file(s), %s on disk%n", dir,
                layers, layers == 1 ? "" : "s", tensors.size(), LoadCommand.human(total), LoadCommand.human(size), parts.size(),
                LoadCommand.human(bytes));
        out.flush();
        return 0;
    }

    private Dtype type = Dtype.BF16;

    /** The tokenizer's largest id must fit the embedding: a model cannot embed a token past its vocabulary. */
    private static void checkTokenizer(Path from, long vocab) throws IOException {
        Path tj = from.resolve("tokenizer.json");
        if (!Files.isRegularFile(tj)) {
            throw new java.nio.file.NoSuchFileException(tj.toString(), null, "--tokenizer: no tokenizer.json there");
        }
        com.fasterxml.jackson.databind.JsonNode root = new com.fasterxml.jackson.databind.ObjectMapper().readTree(tj.toFile());
        long maxId = -1;
        for (com.fasterxml.jackson.databind.JsonNode v : root.path("model").path("vocab")) {
            maxId = Math.max(maxId, v.asLong(-1));
        }
        for (com.fasterxml.jackson.databind.JsonNode t : root.path("added_tokens")) {
            maxId = Math.max(maxId, t.path("id").asLong(-1));
        }
        if (maxId >= vocab) {
            throw new IllegalArgumentException("--tokenizer " + from + ": its ids go up to " + maxId + ", past --vocab " + vocab
                    + ": use --vocab " + (maxId + 1) + " or more");
        }
    }

    /** Writes config.json, generation_config.json and the tokenizer's files; returns their names. */
    /**
     * The files of a checkpoint gen-model writes (or a loader reads beside the weights): a run
     * replaces all of those DIR holds, so that no old index, shard, config or tokenizer is read
     * with the new weights. Other files in DIR stay.
     */
    private static boolean checkpointFile(String name) {
        return switch (name) {
            case ModelFiles.SINGLE_FILE, ModelFiles.INDEX_FILE, "config.json", "generation_config.json", "tokenizer.json",
                    "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja" -> true;
            default -> name.matches("model-\\d{5}-of-\\d{5}\\.safetensors");
        };
    }

    /**
     * Replaces the checkpoint in {@code dir} with the staged files, by renames on one file system:
     * the old checkpoint's files move into the staging directory, then the new ones into
     * {@code dir}. A failure on the way puts the old files back and removes the new ones placed.
     *
     * @return the old files that no new one of the same name replaced (now gone)
     */
    private static List<String> commit(Path staging, Path dir, List<String> names) throws IOException {
        Path old = Files.createDirectory(staging.resolve(".replaced"));
        List<String> movedOut = new ArrayList<>();
        List<String> placed = new ArrayList<>();
        try {
            try (java.util.stream.Stream<Path> files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    String n = f.getFileName().toString();
                    if (checkpointFile(n) && (Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(f))) {
                        Files.move(f, old.resolve(n), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                        movedOut.add(n);
                    }
                }
            }
            for (String n : names) {
                Path to = dir.resolve(n);
                try {
                    Files.move(staging.resolve(n), to, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                } catch (IOException e) {
                    throw io.phxfs.core.FileOperationException.of("move the new " + n + " into place as", to, e);
                }
                placed.add(n);
            }
        } catch (IOException | RuntimeException e) {
            for (String n : placed) {
                try {
                    Files.deleteIfExists(dir.resolve(n));
                } catch (IOException r) {
                    e.addSuppressed(r);
                }
            }
            for (String n : movedOut) {
                try {
                    Files.move(old.resolve(n), dir.resolve(n), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                } catch (IOException r) {
                    e.addSuppressed(r);
                }
            }
            throw e;
        }
        List<String> gone = new ArrayList<>(movedOut);
        gone.removeAll(names);
        gone.sort(null);
        return gone;
    }

    private List<String> writeConfig(Path out, long layerCount) throws IOException {
        List<String> names = new ArrayList<>();
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        com.fasterxml.jackson.databind.node.ObjectNode c = json.createObjectNode();
        c.putArray("architectures").add("LlamaForCausalLM");
        c.put("model_type", "llama");
        c.put("hidden_size", hidden);
        c.put("intermediate_size", intermediate);
        c.put("num_hidden_layers", layerCount);
        c.put("num_attention_heads", heads);
        c.put("num_key_value_heads", kvHeads);
        c.put("head_dim", hidden / heads);
        c.put("vocab_size", vocab);
        c.put("max_position_embeddings", context);
        c.put("rms_norm_eps", 1e-5);
        c.put("hidden_act", "silu");
        c.putObject("rope_parameters").put("rope_theta", 10000.0).put("rope_type", "default");
        c.put("tie_word_embeddings", false);
        c.put("dtype", type == Dtype.F32 ? "float32" : "bfloat16");
        com.fasterxml.jackson.databind.node.ObjectNode g = json.createObjectNode();
        if (tokenizer != null) {
            for (String f : new String[] {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json"}) {
                if (Files.isRegularFile(tokenizer.resolve(f))) {
                    Files.copy(tokenizer.resolve(f), out.resolve(f), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                    names.add(f);
                }
            }
            // the EOS ids the tokenizer's own model used, where it says
            Path gen = tokenizer.resolve("generation_config.json");
            if (Files.isRegularFile(gen)) {
                com.fasterxml.jackson.databind.JsonNode eos = json.readTree(gen.toFile()).path("eos_token_id");
                if (!eos.isMissingNode()) {
                    g.set("eos_token_id", eos);
                    c.set("eos_token_id", eos);
                }
            }
        }
        json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("config.json").toFile(), c);
        names.add("config.json");
        if (!g.isEmpty()) {
            json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("generation_config.json").toFile(), g);
            names.add("generation_config.json");
        }
        return names;
    }

    /** Normal weights (std 0.02; norm weights 1), the same for a tensor whatever the shard or chunk. */
    private static void fillNormal(SafetensorsWriter.Spec t, long offset, ByteBuffer dst, long seed) {
        boolean norm = t.name().endsWith("norm.weight");
        java.nio.ByteOrder order = dst.order();
        dst.order(java.nio.ByteOrder.LITTLE_ENDIAN);
        long index = offset / 4;
        while (dst.remaining() >= 4) {
            float v;
            if (norm) {
                v = 1f;
            } else {
                // counter-based (Box-Muller over two hashes of the element's index): element i of a
                // tensor is the same whichever buffer, shard or chunk asks for it
                long base = seed * 0x9E3779B97F4A7C15L + t.name().hashCode() * 0xBF58476D1CE4E5B9L;
                double u1 = ((mix(base + 2 * index) >>> 11) + 1) * 0x1.0p-53;
                double u2 = (mix(base + 2 * index + 1) >>> 11) * 0x1.0p-53;
                v = (float) (Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2) * 0.02);
            }
            dst.putFloat(v);
            index++;
        }
        dst.order(order);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Embeddings, LM head and final norm, then whole layers while the size allows. */
    List<SafetensorsWriter.Spec> layout(long target) {
        long kvDim = hidden / heads * kvHeads;
        List<SafetensorsWriter.Spec> fixed = List.of(
                spec("model.embed_tokens.weight", vocab, hidden),
                spec("model.norm.weight", hidden),
                spec("lm_head.weight", vocab, hidden));
        long fixedBytes = SafetensorsWriter.dataBytes(fixed);
        long perLayer = SafetensorsWriter.dataBytes(layer(0, kvDim));
        long n = fixedBytes > target ? 0 : (target - fixedBytes) / perLayer;
        if (n == 0) {
            // a model with no layer loads, but benchmarks nothing a user has: refuse it, and say
            // what would work at these dimensions and which options change them
            long smallest = roundUpToMiB(fixedBytes + perLayer);
            String why = fixedBytes > target
                    ? "is smaller than the embeddings and LM head alone (" + LoadCommand.human(fixedBytes) + ")"
                    : "holds the embeddings and LM head (" + LoadCommand.human(fixedBytes) + ") but not one layer ("
                            + LoadCommand.human(perLayer) + " each)";
            throw new IllegalArgumentException("--size " + LoadCommand.human(target) + " " + why + " at --hidden " + hidden
                    + " --intermediate " + intermediate + " --vocab " + vocab + (experts > 0 ? " --experts " + experts : "")
                    + ": use --size " + Sizes.format(smallest).replace(" ", "") + " or more (one layer), or smaller dimensions, e.g. "
                    + smallerDims(target));
        }
        List<SafetensorsWriter.Spec> all = new ArrayList<>();
        all.add(fixed.get(0));
        for (int i = 0; i < n; i++) {
            all.addAll(layer(i, kvDim));
        }
        all.add(fixed.get(1));
        all.add(fixed.get(2));
        return all;
    }

    private static long roundUpToMiB(long bytes) {
        return (bytes + (1L << 20) - 1) >>> 20 << 20;
    }

    /** A command-line fragment with dimensions a quarter, a sixteenth, ... as large whose model has a layer at {@code target}. */
    private String smallerDims(long target) {
        GenModelCommand c = new GenModelCommand();
        c.type = type;
        c.experts = experts;
        c.expertIntermediate = expertIntermediate;
        for (long div = 4; div <= 1 << 12; div *= 4) {
            c.hidden = Math.max(64, hidden / div);
            c.intermediate = Math.max(64, intermediate / div);
            c.vocab = Math.max(256, vocab / div);
            c.heads = Math.max(1, Math.min(heads, c.hidden / 64));
            while (c.hidden % c.heads != 0) {
                c.heads--;
            }
            c.kvHeads = 1;
            long kvDim = c.hidden / c.heads;
            long fixed = SafetensorsWriter.dataBytes(List.of(spec("e", c.vocab, c.hidden), spec("n", c.hidden),
                    spec("h", c.vocab, c.hidden)));
            long layer = SafetensorsWriter.dataBytes(c.layer(0, kvDim));
            if (fixed + layer <= target) {
                return "--hidden " + c.hidden + " --intermediate " + c.intermediate + " --vocab " + c.vocab + " --heads "
                        + c.heads + " --kv-heads 1 (" + (target - fixed) / layer + " layers in " + LoadCommand.human(target) + ")";
            }
        }
        return "--hidden 64 --intermediate 64 --vocab 256 --heads 1 --kv-heads 1";
    }

    private List<SafetensorsWriter.Spec> layer(int i, long kvDim) {
        String p = "model.layers." + i + ".";
        List<SafetensorsWriter.Spec> l = new ArrayList<>(List.of(
                spec(p + "input_layernorm.weight", hidden),
                spec(p + "self_attn.q_proj.weight", hidden, hidden),
                spec(p + "self_attn.k_proj.weight", kvDim, hidden),
                spec(p + "self_attn.v_proj.weight", kvDim, hidden),
                spec(p + "self_attn.o_proj.weight", hidden, hidden),
                spec(p + "post_attention_layernorm.weight", hidden)));
        if (experts == 0) {
            l.add(spec(p + "mlp.gate_proj.weight", intermediate, hidden));
            l.add(spec(p + "mlp.up_proj.weight", intermediate, hidden));
            l.add(spec(p + "mlp.down_proj.weight", hidden, intermediate));
            return l;
        }
        long m = expertIntermediate != null ? expertIntermediate : Math.max(1, (1L << 20) / (2 * hidden));
        l.add(spec(p + "mlp.gate.weight", experts, hidden));
        for (int e = 0; e < experts; e++) {
            String x = p + "mlp.experts." + e + ".";
            l.add(spec(x + "gate_proj.weight", m, hidden));
            l.add(spec(x + "up_proj.weight", m, hidden));
            l.add(spec(x + "down_proj.weight", hidden, m));
        }
        return l;
    }

    private static long layers(List<SafetensorsWriter.Spec> tensors) {
        return tensors.stream().filter(t -> t.name().endsWith(".input_layernorm.weight")).count();
    }

    private SafetensorsWriter.Spec spec(String name, long... shape) {
        return new SafetensorsWriter.Spec(name, type, shape);
    }

    /** Consecutive runs of about equal bytes, each at least one tensor. */
    static List<List<SafetensorsWriter.Spec>> split(List<SafetensorsWriter.Spec> tensors, int n) {
        long total = SafetensorsWriter.dataBytes(tensors);
        List<List<SafetensorsWriter.Spec>> parts = new ArrayList<>();
        List<SafetensorsWriter.Spec> cur = new ArrayList<>();
        long done = 0;
        for (int i = 0; i < tensors.size(); i++) {
            cur.add(tensors.get(i));
            done += tensors.get(i).nbytes();
            int left = tensors.size() - i - 1;
            int partsLeft = n - parts.size() - 1;
            boolean full = done >= total / n * (parts.size() + 1);
            if (partsLeft > 0 && (full || left == partsLeft)) {
                parts.add(cur);
                cur = new ArrayList<>();
            }
        }
        parts.add(cur);
        return parts;
    }

    private static void fillRandom(byte[] b, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < b.length; i += 8) {
            long v = r.nextLong();
            for (int k = 0; k < 8; k++) {
                b[i + k] = (byte) (v >>> (8 * k));
            }
        }
    }

    /** Bytes from a random pool at an offset that depends on tensor and position: fast and incompressible enough. */
    private static void fill(byte[] pool, SafetensorsWriter.Spec t, long offset, ByteBuffer dst) {
        int start = (int) Math.floorMod(t.name().hashCode() * 7919L + offset / 4096 * 4099L, (long) pool.length);
        while (dst.hasRemaining()) {
            int n = Math.min(dst.remaining(), pool.length - start);
            dst.put(pool, start, n);
            start = 0;
        }
    }

    private static void writeIndex(Path file, long total, Map<String, String> weightMap) throws IOException {
        try (OutputStream os = Files.newOutputStream(file); JsonGenerator g = new JsonFactory().createGenerator(os)) {
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeObjectFieldStart("metadata");
            g.writeNumberField("total_size", total);
            g.writeEndObject();
            g.writeObjectFieldStart("weight_map");
            for (Map.Entry<String, String> e : weightMap.entrySet()) {
                g.writeStringField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
            g.writeEndObject();
        }
    }
}
