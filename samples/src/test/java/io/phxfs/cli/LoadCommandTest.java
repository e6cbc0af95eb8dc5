package io.phxfs.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.phxfs.safetensors.Fixtures;
import io.phxfs.safetensors.MalformedCorpus;
import io.phxfs.safetensors.TempDirs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code phoenix load}: its JSON against reference.json, selection, and exit codes on bad input. */
class LoadCommandTest {
    private static Path corpusDir;
    private static List<MalformedCorpus.Case> corpus;

    @BeforeAll
    static void corpus() throws IOException {
        corpusDir = Files.createTempDirectory("phx-cli-malformed");
        corpus = MalformedCorpus.generate(corpusDir);
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TempDirs.delete(corpusDir);
    }

    static List<MalformedCorpus.Case> malformed() {
        return corpus;
    }

    /** The tensors of one reference file as the CLI prints them: dtype, shape, nbytes, sha256. */
    private static void assertMatchesReference(JsonNode tensors, String refFile, String fileName) {
        Map<String, Fixtures.RefTensor> ref = Fixtures.reference().get(refFile).tensors();
        for (Map.Entry<String, Fixtures.RefTensor> e : ref.entrySet()) {
            JsonNode t = tensors.path(e.getKey());
            String what = refFile + " " + e.getKey();
            assertFalse(t.isMissingNode(), what + " missing from the output");
            assertEquals(e.getValue().dtype().headerName(), t.path("dtype").asText(), what);
            long[] shape = new long[t.path("shape").size()];
            for (int i = 0; i < shape.length; i++) {
                shape[i] = t.path("shape").get(i).asLong();
            }
            assertEquals(java.util.Arrays.toString(e.getValue().shape()), java.util.Arrays.toString(shape), what);
            assertEquals(e.getValue().nbytes(), t.path("nbytes").asLong(), what);
            assertEquals(e.getValue().sha256(), t.path("sha256").asText(), what);
            if (fileName != null) {
                assertEquals(fileName, t.path("file").asText(), what);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"--host", "--device=0"})
    void everyFixtureFileMatchesTheReference(String target) {
        for (String file : Fixtures.reference().keySet()) {
            Path p = Fixtures.file(file);
            Cli r = Cli.run("load", p.toString(), target, "--json", "--checksums");
            assertEquals(0, r.exit(), r.toString());
            JsonNode j = r.json();
            assertEquals(target.equals("--host") ? "host" : Phoenix0.mode(), j.path("mode").asText());
            assertEquals(1, j.path("files").asInt());
            assertEquals(Fixtures.reference().get(file).tensors().size(), j.path("tensors").size(), file);
            long bytes = Fixtures.reference().get(file).tensors().values().stream().mapToLong(Fixtures.RefTensor::nbytes).sum();
            assertEquals(bytes, j.path("bytes").asLong());
            assertTrue(j.path("seconds").asDouble() > 0);
            assertTrue(j.has("gb_per_s"));
            assertMatchesReference(j.path("tensors"), file, p.getFileName().toString());
        }
    }

    /**
     * Every millisecond of "seconds" belongs to a named phase: the phases that follow one
     * another sum to it (the parse, plan and views inside the read when the reads started
     * first), and what no phase holds stays under a millisecond. Each way a load runs: reads
     * before the parse (device, host copy), parsed first, the index named, and host mapping.
     */
    @ParameterizedTest
    @ValueSource(strings = {"--device=0", "--host --copy", "--device=0 --parse-first", "--host", "--device=0 INDEX"})
    void thePhasesTileTheLoadsSeconds(String args) {
        java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of("load"));
        boolean index = args.endsWith("INDEX");
        cmd.add(Fixtures.file(index ? "tiny-gpt2-sharded/model.safetensors.index.json" : "tiny-gpt2-sharded").toString());
        cmd.addAll(java.util.List.of(args.replace(" INDEX", "").split(" ")));
        cmd.add("--json");
        Cli r = Cli.run(cmd.toArray(String[]::new));
        assertEquals(0, r.exit(), r.toString());
        JsonNode j = r.json();
        boolean overlap = j.path("reads_overlap_parse").asBoolean();
        assertEquals(!args.contains("--parse-first") && !args.equals("--host"), overlap, r::toString);
        java.util.List<String> seq = new java.util.ArrayList<>(java.util.List.of("cli", "locate", "allocate", "read", "other"));
        if (!overlap) {
            seq.addAll(java.util.List.of("parse", "plan", "view"));
        }
        double sum = 0;
        for (String k : seq) {
            assertTrue(j.path(k + "_seconds").isNumber(), k + "_seconds missing: " + r);
            assertTrue(j.path(k + "_seconds").asDouble() >= (k.equals("other") ? -1e-3 : 0), k + ": " + r);
            sum += j.path(k + "_seconds").asDouble();
        }
        // each phase is rounded to a microsecond in the JSON
        assertEquals(j.path("seconds").asDouble(), sum, 1e-5 * seq.size(), r::toString);
        assertTrue(Math.abs(j.path("other_seconds").asDouble()) < 1e-3, r::toString);
        // libphoenix's batch times take the read apart, and the four parts tile it
        JsonNode split = j.path("read_split");
        if (!args.equals("--host")) { // a mapped load reads through no batch
            assertTrue(split.isObject(), "read_split missing: " + r);
            double parts = 0;
            for (String k : java.util.List.of("submit", "start", "transfer", "complete")) {
                assertTrue(split.path(k + "_seconds").asDouble(-1) >= 0, k + ": " + r);
                parts += split.path(k + "_seconds").asDouble();
            }
            assertEquals(j.path("read_seconds").asDouble(), parts, 4e-6 + 1e-6, r::toString);
            assertTrue(split.path("transfer_seconds").asDouble() > 0, r::toString);
        }
        // the early reads' allocate phase taken apart: four parts on the loading thread tile it,
        // and the allocation itself ran beside the opens, within the phase
        JsonNode alloc = j.path("allocate_split");
        assertEquals(overlap, alloc.isObject(), "allocate_split for the reads started before the parse only: " + r);
        if (overlap) {
            double parts = 0;
            for (String k : java.util.List.of("extents", "opens", "allocation_wait", "other")) {
                assertTrue(alloc.path(k + "_seconds").asDouble(-1) >= 0, k + ": " + r);
                parts += alloc.path(k + "_seconds").asDouble();
            }
            assertEquals(j.path("allocate_seconds").asDouble(), parts, 4e-6 + 1e-6, r::toString);
            double allocation = alloc.path("allocation_seconds").asDouble(-1);
            assertTrue(allocation >= 0 && allocation <= j.path("allocate_seconds").asDouble() + 1e-6, r::toString);
        }
        if (overlap) {
            double inside = j.path("parse_seconds").asDouble() + j.path("plan_seconds").asDouble() + j.path("view_seconds").asDouble();
            assertTrue(inside <= j.path("read_seconds").asDouble() + 1e-5, "parse, plan and views within the read: " + r);
        }
    }

    @Test
    void shardedModelMatchesTheSingleFileReference() {
        Cli r = Cli.run("load", Fixtures.file("tiny-gpt2-sharded").toString(), "--host", "--json", "--checksums");
        assertEquals(0, r.exit(), r.toString());
        JsonNode j = r.json();
        assertEquals(5, j.path("files").asInt());
        assertMatchesReference(j.path("tensors"), "tiny-gpt2/model.safetensors", null);
        assertEquals("model-00001-of-00005.safetensors", j.path("tensors").path("transformer.wte.weight").path("file").asText());
        Cli viaIndex = Cli.run("load", Fixtures.file("tiny-gpt2-sharded/model.safetensors.index.json").toString(),
                "--host", "--json", "--checksums");
        assertEquals(0, viaIndex.exit(), viaIndex.toString());
        assertEquals(j.path("tensors"), viaIndex.json().path("tensors"));
    }

    @Test
    void onlyLoadsWhatTheRegexMatches() {
        Cli r = Cli.run("load", Fixtures.file("tiny-gpt2-sharded").toString(), "--host", "--json", "--only",
                "^transformer\\.h\\.0\\.attn\\.");
        assertEquals(0, r.exit(), r.toString());
        JsonNode j = r.json();
        Set<String> names = new TreeSet<>();
        j.path("tensors").fieldNames().forEachRemaining(names::add);
        assertEquals(Set.of("transformer.h.0.attn.c_attn.bias", "transformer.h.0.attn.c_attn.weight",
                "transformer.h.0.attn.c_proj.bias", "transformer.h.0.attn.c_proj.weight"), names);
        assertEquals(1, j.path("files").asInt());
        assertFalse(j.path("tensors").path("transformer.h.0.attn.c_attn.bias").has("sha256"), "sha256 only with --checksums");
        Map<String, Fixtures.RefTensor> ref = Fixtures.reference().get("tiny-gpt2/model.safetensors").tensors();
        assertEquals(names.stream().mapToLong(n -> ref.get(n).nbytes()).sum(), j.path("bytes").asLong());
    }

    @Test
    void textOutputSummarises() {
        Cli r = Cli.run("load", Fixtures.file("tiny-llama").toString(), "--checksums");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().startsWith("loaded 21 tensors"), r.out());
        Map<String, Fixtures.RefTensor> ref = new TreeMap<>(Fixtures.reference().get("tiny-llama/model.safetensors").tensors());
        ref.values().forEach(t -> assertTrue(r.out().contains(t.sha256())));

        Cli one = Cli.run("load", Fixtures.file("tiny-llama").toString(), "--only", "^model\\.norm\\.weight$");
        assertEquals(0, one.exit(), one.toString());
        assertTrue(one.out().startsWith("loaded 1 tensor, "), one.out());
    }

    @Test
    void withoutAnAcceleratorTheDefaultIsTheHostPathSaidOnce() {
        String llama = Fixtures.file("tiny-llama").toString();
        Cli r = Cli.run("load", llama, "--json");
        assertEquals(0, r.exit(), r.toString());
        if (io.phxfs.core.Phoenix.open().device(0).isHostMemory()) {
            assertEquals("host", r.json().path("mode").asText(), r.out());
            assertEquals(-1, r.json().path("device").asInt(), r.out());
            assertEquals(List.of("phoenix: no accelerator: using host memory (--device 0 forces a copy into device-0 memory,"
                    + " which is host memory too)"), r.err().lines().toList());
        } else {
            assertEquals(0, r.json().path("device").asInt(), r.out());
            assertEquals("", r.err());
        }
        Cli forced = Cli.run("load", llama, "--device", "0", "--json");
        assertEquals(0, forced.exit(), forced.toString());
        assertEquals(0, forced.json().path("device").asInt(), forced.out());
        assertEquals("", forced.err());
    }

    @Test
    void hostTensorsAreReadOnlyMappingsUnlessCopyAsksForWritableOnes() {
        String llama = Fixtures.file("tiny-llama").toString();
        Cli mapped = Cli.run("load", llama, "--host", "--json", "--checksums");
        Cli copied = Cli.run("load", llama, "--host", "--copy", "--json", "--checksums");
        assertEquals(0, mapped.exit(), mapped.toString());
        assertEquals(0, copied.exit(), copied.toString());
        // the fixture was just read: warm files are mapped by default
        assertFalse(mapped.json().path("writable").asBoolean(), mapped.out());
        assertTrue(copied.json().path("writable").asBoolean(), copied.out());
        assertEquals(mapped.json().path("tensors"), copied.json().path("tensors"));
        Cli text = Cli.run("load", llama, "--host");
        assertTrue(text.out().contains("mapped read-only; --copy for writable tensors"), text.out());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformed")
    void malformedInputExitsTwoWithOneLine(MalformedCorpus.Case c) {
        Cli r = Cli.run("load", c.input().toString(), "--host", "--json");
        assertEquals(2, r.exit(), r.toString());
        assertEquals("", r.out(), "nothing on stdout");
        String err = r.err();
        assertTrue(err.endsWith("\n") && err.indexOf('\n') == err.length() - 1, "one line on stderr: " + err);
        assertTrue(err.contains(c.blamed().toString()), "names the file: " + err);
        assertTrue(err.contains(c.expected()), "names the problem: " + err);
    }

    @Test
    void otherInvalidInputExitsTwo() {
        String llama = Fixtures.file("tiny-llama").toString();
        for (String[] args : new String[][] {
                {"load", "/no/such/model"},
                {"load", llama, "--only", "(unclosed"},
                {"load", llama, "--only", "no-tensor-has-this-name"},
                {"load", llama, "--device", "99"},
                {"load", llama, "--host", "--device", "0"},
                {"load", llama, "--devices", "0,99"},
                {"load", llama, "--devices", "0,0"},
                {"load", llama, "--devices", "0", "--host"},
                {"load", llama, "--devices", "0", "--spread", "diagonal"},
                {"load"}}) {
            Cli r = Cli.run(args);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r);
            assertEquals("", r.out(), String.join(" ", args));
        }
    }

    @Test
    void devicesReplicateOrSplitAndReportEachDevice() {
        String llama = Fixtures.file("tiny-llama").toString();
        int n = io.phxfs.core.Phoenix.open().deviceCount();
        String ids = n >= 2 ? "0,1" : "0";
        Cli rep = Cli.run("load", llama, "--devices", ids, "--json", "--checksums");
        assertEquals(0, rep.exit(), rep.toString());
        JsonNode devs = rep.json().path("devices");
        assertEquals("replicate", rep.json().path("spread").asText());
        assertEquals(ids.split(",").length, devs.size(), rep.out());
        for (JsonNode d : devs) {
            assertEquals(rep.json().path("bytes").asLong(), d.path("bytes").asLong(), "every device holds the model");
            assertEquals(devs.get(0).path("sha256").asText(), d.path("sha256").asText(), "equal checksums on every device");
        }
        Cli split = Cli.run("load", llama, "--devices", ids, "--spread", "split", "--json");
        assertEquals(0, split.exit(), split.toString());
        long total = 0;
        for (JsonNode d : split.json().path("devices")) {
            total += d.path("bytes").asLong();
        }
        assertEquals(split.json().path("bytes").asLong(), total, "split: each tensor on one device");
        Cli text = Cli.run("load", llama, "--devices", ids, "--checksums");
        assertTrue(text.out().contains("device 0: "), text.out());
        assertTrue(text.out().contains(" into devices " + ids + ", replicated (mode "), text.out());
        Cli splitText = Cli.run("load", llama, "--devices", ids, "--spread", "split");
        assertTrue(splitText.out().contains(" into devices " + ids + ", layers split over them (mode "), splitText.out());
    }

    /** The mode device 0 reports, as the CLI prints it. */
    static final class Phoenix0 {
        static String mode() {
            return io.phxfs.core.Phoenix.open().device(0).mode().name().toLowerCase(java.util.Locale.ROOT);
        }
    }
}
