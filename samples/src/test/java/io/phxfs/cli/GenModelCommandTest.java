package io.phxfs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.phxfs.safetensors.ModelFiles;
import io.phxfs.safetensors.SafetensorsWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code phoenix gen-model}: Llama names and shapes, layers as the size allows, shards with an index. */
class GenModelCommandTest {
    private static final String[] SMALL = {"--hidden", "64", "--intermediate", "224", "--vocab", "100", "--heads", "4",
            "--kv-heads", "2"};

    @TempDir
    Path dir;

    private static String[] args(String... more) {
        String[] a = new String[SMALL.length + more.length];
        System.arraycopy(more, 0, a, 0, more.length);
        System.arraycopy(SMALL, 0, a, more.length, SMALL.length);
        return a;
    }

    @Test
    void aModelWrittenOverAnotherReplacesItWhole() throws Exception {
        // four shards and an index, then one file in the same directory: the old shards and index
        // go (a loader would read them through the index), the user's own files stay
        Path m = dir.resolve("over");
        assertEquals(0, Cli.run(args("gen-model", m.toString(), "--size", "400k", "--shards", "4")).exit());
        Files.writeString(m.resolve("README.md"), "the user's");
        Cli r = Cli.run(args("gen-model", m.toString(), "--size", "300k", "--seed", "7"));
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.err().contains("removed model-00001-of-00004.safetensors, model-00002-of-00004.safetensors,"
                + " model-00003-of-00004.safetensors, model-00004-of-00004.safetensors, model.safetensors.index.json of the"
                + " checkpoint"), r.err());
        try (java.util.stream.Stream<Path> files = Files.list(m)) {
            assertEquals(List.of("README.md", "config.json", ModelFiles.SINGLE_FILE),
                    files.map(f -> f.getFileName().toString()).sorted().toList());
        }
        JsonNode now = Cli.run("load", m.toString(), "--host", "--json", "--checksums").json();
        assertEquals(1, now.path("files").asInt());
        Path fresh = dir.resolve("fresh");
        assertEquals(0, Cli.run(args("gen-model", fresh.toString(), "--size", "300k", "--seed", "7")).exit());
        JsonNode same = Cli.run("load", fresh.toString(), "--host", "--json", "--checksums").json();
        assertEquals(same.path("tensors"), now.path("tensors"), "the directory holds the new model and nothing of the old");
    }

    /** A move that fails while the new model goes into place leaves the old one as it was. */
    @Test
    void aFailedCommitLeavesTheOldModelWhole() throws Exception {
        Path m = dir.resolve("old");
        assertEquals(0, Cli.run(args("gen-model", m.toString(), "--size", "400k", "--shards", "2")).exit());
        byte[] oldShard = Files.readAllBytes(m.resolve("model-00001-of-00002.safetensors"));
        byte[] oldIndex = Files.readAllBytes(m.resolve(ModelFiles.INDEX_FILE));
        Files.delete(m.resolve("config.json"));
        Files.createDirectories(m.resolve("config.json/keep")); // the last move fails: a directory holds the name
        Cli r = Cli.run(args("gen-model", m.toString(), "--size", "400k", "--shards", "2", "--seed", "7"));
        assertTrue(r.exit() != 0, r.toString());
        assertTrue(r.err().contains("move the new config.json into place as " + m.resolve("config.json")), r.toString());
        assertTrue(java.util.Arrays.equals(oldShard, Files.readAllBytes(m.resolve("model-00001-of-00002.safetensors"))),
                "a failed run replaced the old model's shard: " + r);
        assertTrue(java.util.Arrays.equals(oldIndex, Files.readAllBytes(m.resolve(ModelFiles.INDEX_FILE))), r.toString());
        try (java.util.stream.Stream<Path> files = Files.list(m)) {
            assertEquals(List.of("config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                    ModelFiles.INDEX_FILE), files.map(f -> f.getFileName().toString()).sorted().toList(), "no staging left");
        }
    }

    /** A tokenizer an earlier run copied in goes when the new model has none: its ids would not fit. */
    @Test
    void anEarlierRunsTokenizerDoesNotOutliveItsModel() throws Exception {
        Path m = dir.resolve("tok");
        Path tok = io.phxfs.safetensors.Fixtures.file("tiny-chat-llama");
        assertEquals(0, Cli.run("gen-model", m.toString(), "--size", "2m", "--dtype", "f32", "--tokenizer", tok.toString(),
                "--hidden", "64", "--intermediate", "128", "--heads", "4", "--kv-heads", "2", "--vocab", "1024").exit());
        assertTrue(Files.exists(m.resolve("tokenizer.json")));
        Cli r = Cli.run(args("gen-model", m.toString(), "--size", "400k"));
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.err().contains("tokenizer.json"), r.err());
        assertTrue(!Files.exists(m.resolve("tokenizer.json")) && !Files.exists(m.resolve("tokenizer_config.json")), r.err());
    }

    @Test
    void singleFileAndShardsHoldTheSameModel() throws Exception {
        // per layer: 2 norms (2*64) + q,o (2*64*64) + k,v (2*32*64) + 3 mlp (3*224*64) = 55424 bf16 = 110848 bytes;
        // fixed: 2 * 100*64 + 64 = 12864 elements = 25728 bytes; 400k fits 3 layers
        Path single = dir.resolve("single");
        Cli r = Cli.run(args("gen-model", single.toString(), "--size", "400k"));
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().contains("3 layers, 30 tensors"), r.out());
        assertTrue(Files.isRegularFile(single.resolve(ModelFiles.SINGLE_FILE)));

        Path sharded = dir.resolve("sharded");
        r = Cli.run(args("gen-model", sharded.toString(), "--size", "400k", "--shards", "4"));
        assertEquals(0, r.exit(), r.toString());
        assertTrue(Files.isRegularFile(sharded.resolve(ModelFiles.INDEX_FILE)));
        assertEquals(4, ModelFiles.open(sharded).files().size());

        JsonNode a = Cli.run("load", single.toString(), "--host", "--json", "--checksums").json();
        JsonNode b = Cli.run("load", sharded.toString(), "--host", "--json", "--checksums").json();
        assertEquals(1, a.path("files").asInt());
        assertEquals(4, b.path("files").asInt());
        assertEquals(30, a.path("tensors").size());
        JsonNode q = a.path("tensors").path("model.layers.2.self_attn.k_proj.weight");
        assertEquals("BF16", q.path("dtype").asText());
        assertEquals("[32,64]", q.path("shape").toString());
        assertEquals("[100,64]", a.path("tensors").path("lm_head.weight").path("shape").toString());
        a.path("tensors").properties().forEach(e -> assertEquals(e.getValue().path("sha256"),
                b.path("tensors").path(e.getKey()).path("sha256"), e.getKey()));
    }

    @Test
    void expertsMakeManySmallTensors() {
        // per layer: 2 norms (128) + attention (12288) + router (8*64) + 8 experts x 3 x (16*64) = 37504 bf16;
        // experts of 16: --expert-intermediate 16
        Path moe = dir.resolve("moe");
        Cli r = Cli.run(args("gen-model", moe.toString(), "--size", "400k", "--experts", "8", "--expert-intermediate", "16"));
        assertEquals(0, r.exit(), r.toString());
        JsonNode a = Cli.run("load", moe.toString(), "--host", "--json").json();
        JsonNode tensors = a.path("tensors");
        // (409600 - 25728 fixed bytes) / 75008 bytes a layer: 5 layers of 31 tensors, and 3 more
        assertTrue(r.out().contains("5 layers, 158 tensors"), r.out());
        assertEquals("[16,64]", tensors.path("model.layers.0.mlp.experts.7.up_proj.weight").path("shape").toString());
        assertEquals("[64,16]", tensors.path("model.layers.0.mlp.experts.0.down_proj.weight").path("shape").toString());
        assertEquals("[8,64]", tensors.path("model.layers.0.mlp.gate.weight").path("shape").toString());
        assertTrue(tensors.path("model.layers.0.mlp.gate_proj.weight").isMissingNode(), "no dense MLP");
        assertEquals(158, tensors.size());
        // the default expert: 1 MiB of bf16 (hidden 64: 8192 rows)
        GenModelCommand g = new GenModelCommand();
        g.hidden = 4096;
        g.intermediate = 14336;
        g.vocab = 32000;
        g.heads = 32;
        g.kvHeads = 8;
        g.experts = 4;
        List<SafetensorsWriter.Spec> t = g.layout(1L << 30);
        assertEquals(1L << 20, t.stream().filter(s -> s.name().endsWith("experts.3.gate_proj.weight")).findFirst()
                .orElseThrow().nbytes());
        assertEquals(2, Cli.run(args("gen-model", dir.resolve("e").toString(), "--expert-intermediate", "4")).exit());
        assertEquals(2, Cli.run(args("gen-model", dir.resolve("f").toString(), "--experts", "-1")).exit());
    }

    @Test
    void theDefaultsAreLlamaEightB() {
        GenModelCommand g = new GenModelCommand();
        g.hidden = 4096;
        g.intermediate = 14336;
        g.vocab = 32000;
        g.heads = 32;
        g.kvHeads = 8;
        g.size = 4L << 30;
        List<SafetensorsWriter.Spec> t = g.layout(4L << 30);
        long layers = t.stream().filter(s -> s.name().endsWith("mlp.down_proj.weight")).count();
        assertEquals(8, layers, "8 layers of 436 MB beside 524 MB of embeddings fit 4 GiB");
        assertTrue(SafetensorsWriter.dataBytes(t) <= 4L << 30);
        assertEquals("[1024, 4096]", java.util.Arrays.toString(t.stream()
                .filter(s -> s.name().equals("model.layers.0.self_attn.k_proj.weight")).findFirst().orElseThrow().shape()));
    }

    @Test
    void aSizeWithoutRoomForALayerIsRefusedWithTheWayForward() {
        // at the defaults the embeddings and head are 500 MiB and a layer 416 MiB: 256m holds neither,
        // 600m the embeddings but no layer (it used to write a model of 0 layers)
        for (String size : new String[] {"256m", "600m"}) {
            Path out = dir.resolve("m" + size);
            Cli r = Cli.run("gen-model", out.toString(), "--size", size);
            assertEquals(2, r.exit(), r.toString());
            assertTrue(r.err().contains("use --size 917MiB or more (one layer)"), r.err());
            String hint = r.err().substring(r.err().indexOf("e.g. ") + 5, r.err().indexOf(" (", r.err().indexOf("e.g. ")));
            assertTrue(r.err().contains(size.equals("256m") ? "smaller than the embeddings and LM head alone"
                    : "but not one layer"), r.err());
            assertTrue(!Files.exists(out), "nothing written for a refused size");
            if (size.equals("600m")) {
                continue; // one written suggestion is enough (256 MiB of disk)
            }
            // the suggested dimensions work at the size asked for, with at least one layer
            List<String> a = new java.util.ArrayList<>(List.of("gen-model", out.toString(), "--size", size));
            a.addAll(List.of(hint.split(" ")));
            Cli ok = Cli.run(a.toArray(String[]::new));
            assertEquals(0, ok.exit(), hint + ": " + ok);
            assertTrue(!ok.out().contains(": 0 layers"), ok.out());
        }
        // the minimum it names is enough for one layer, and a MiB less is not
        GenModelCommand g = new GenModelCommand();
        g.hidden = 4096;
        g.intermediate = 14336;
        g.vocab = 32000;
        g.heads = 32;
        g.kvHeads = 8;
        assertEquals(1, g.layout(917L << 20).stream().filter(t -> t.name().endsWith(".input_layernorm.weight")).count());
        assertThrows(IllegalArgumentException.class, () -> g.layout(916L << 20));
    }

    @Test
    void float32WithATokenizerIsACheckpointTheBlocksRun() throws Exception {
        Path tok = io.phxfs.safetensors.Fixtures.file("tiny-chat-llama");
        Path out = dir.resolve("served");
        Cli r = Cli.run("gen-model", out.toString(), "--size", "2m", "--dtype", "f32", "--tokenizer", tok.toString(),
                "--hidden", "64", "--intermediate", "128", "--vocab", "1024", "--heads", "4", "--kv-heads", "2", "--context", "512");
        assertEquals(0, r.exit(), r.toString());
        for (String f : new String[] {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                "chat_template.jinja", "model.safetensors"}) {
            assertTrue(Files.isRegularFile(out.resolve(f)), f);
        }
        JsonNode config = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.resolve("config.json").toFile());
        assertEquals("llama", config.path("model_type").asText());
        assertEquals(512, config.path("max_position_embeddings").asInt());
        assertEquals(1024, config.path("vocab_size").asInt());
        assertEquals("[4,1]", config.path("eos_token_id").toString(), "the tokenizer's model's EOS ids");
        JsonNode load = Cli.run("load", out.toString(), "--host", "--json").json();
        assertEquals("F32", load.path("tensors").path("model.layers.0.self_attn.q_proj.weight").path("dtype").asText());
        // a tokenizer whose ids do not fit the vocabulary is refused with the way out
        Cli small = Cli.run("gen-model", dir.resolve("x").toString(), "--size", "2m", "--dtype", "f32", "--tokenizer",
                tok.toString(), "--hidden", "64", "--intermediate", "128", "--vocab", "100", "--heads", "4", "--kv-heads", "2");
        assertEquals(2, small.exit(), small.toString());
        assertTrue(small.err().contains("use --vocab 1024 or more"), small.err());
        assertEquals(2, Cli.run("gen-model", dir.resolve("y").toString(), "--dtype", "f8").exit());
    }

    @Test
    void tooSmallASizeIsInvalid() {
        Cli r = Cli.run(args("gen-model", dir.resolve("x").toString(), "--size", "1k"));
        assertEquals(2, r.exit(), r.toString());
        r = Cli.run(args("gen-model", dir.resolve("y").toString(), "--size", "400k", "--shards", "999"));
        assertEquals(2, r.exit(), r.toString());
    }
}
