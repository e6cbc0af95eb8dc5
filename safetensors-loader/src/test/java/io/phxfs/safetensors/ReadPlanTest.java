package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Read groups, alignment and slots, checked as arithmetic (no I/O). */
class ReadPlanTest {
    private static final long KIB4 = 4096;

    @TempDir
    Path dir;

    private ModelFiles model(String name, List<SafetensorsWriter.Spec> specs) throws IOException {
        return ModelFiles.open(TestFiles.valid(dir.resolve(name), Map.of(), specs));
    }

    @Test
    void wholeFileIsOneAlignedGroup() throws IOException {
        ModelFiles m = model("a.safetensors", List.of(spec("x", Dtype.F32, 1000), spec("y", Dtype.BF16, 3, 7)));
        ReadPlan p = ReadPlan.of(m);
        SafetensorsHeader h = m.files().get(0);
        assertEquals(1, p.groups().size());
        ReadPlan.ReadGroup g = p.groups().get(0);
        assertEquals(0, g.fileOffset(), "the group starts at the page holding the first tensor");
        assertEquals(KIB4 * ((h.fileSize() + KIB4 - 1) / KIB4), g.length());
        assertEquals(h.fileSize(), g.neededLength());
        for (ReadPlan.PlannedTensor t : p.tensors().values()) {
            assertEquals(t.fileOffset(), t.bufferOffset(), "from page 0 the view sits at its file offset");
        }
        assertEquals(Map.of(Placement.HOST, g.length()), p.bufferBytes());
        assertEquals(4042, p.tensorBytes());
        assertEquals(1, p.fileCount());
    }

    @Test
    void gapsDecideMerging() throws IOException {
        List<SafetensorsWriter.Spec> specs = List.of(spec("a", Dtype.U8, 1000), spec("big", Dtype.U8, 3 << 20),
                spec("c", Dtype.U8, 1000));
        ModelFiles m = model("gaps.safetensors", specs);
        TensorSelector ac = TensorSelector.names("a", "c");
        ReadPlan split = ReadPlan.of(m, ac, Placement.all(Placement.HOST), ReadPlan.Options.defaults());
        assertEquals(2, split.groups().size(), "a 3 MiB gap is over the 1 MiB default");
        assertEquals(2 * KIB4, split.bufferBytes().get(Placement.HOST), "two pages, not 3 MiB");
        ReadPlan merged = ReadPlan.of(m, ac, Placement.all(Placement.HOST),
                ReadPlan.Options.defaults().withMergeGap(4 << 20));
        assertEquals(1, merged.groups().size());
        assertTrue(merged.readBytes() > 3 << 20);
        assertEquals(2000, merged.tensorBytes());
        checkInvariants(split);
        checkInvariants(merged);
    }

    @Test
    void largeGroupsSplitIntoBoundedRequests() throws IOException {
        ModelFiles m = model("big.safetensors", List.of(spec("w", Dtype.U8, (5 << 20) + 123)));
        ReadPlan p = ReadPlan.of(m, TensorSelector.all(), Placement.all(Placement.HOST),
                ReadPlan.Options.defaults().withMaxRequestBytes(1 << 20));
        assertEquals(1, p.groups().size());
        assertEquals(6, p.requests().size());
        checkInvariants(p);
    }

    @Test
    void placementGivesEachTargetItsOwnBuffer() throws IOException {
        ModelFiles m = model("p.safetensors", List.of(spec("l0", Dtype.F32, 100), spec("l1", Dtype.F32, 100),
                spec("l2", Dtype.F32, 100), spec("l3", Dtype.F32, 100)));
        ReadPlan p = ReadPlan.of(m, TensorSelector.all(), t -> t.name().compareTo("l2") < 0 ? 0 : 1,
                ReadPlan.Options.defaults());
        assertEquals(List.of(0, 1), List.copyOf(p.bufferBytes().keySet()));
        assertEquals(0, p.tensor("l0").orElseThrow().target());
        assertEquals(1, p.tensor("l3").orElseThrow().target());
        checkInvariants(p);
    }

    @Test
    void slotsContinueAcrossFilesAndEmptyTensorsTakeNone() throws IOException {
        SafetensorsHeader a = SafetensorsParser.standard().parse(TestFiles.valid(dir.resolve("m1.safetensors"), Map.of(),
                List.of(spec("x", Dtype.F16, 3000), spec("empty", Dtype.F32, 0, 3))));
        SafetensorsHeader b = SafetensorsParser.standard().parse(TestFiles.valid(dir.resolve("m2.safetensors"), Map.of(),
                List.of(spec("y", Dtype.F16, 5000))));
        ReadPlan p = ReadPlan.of(ModelFiles.of(a, b), TensorSelector.all(), Placement.all(3), ReadPlan.Options.defaults());
        assertEquals(2, p.groups().size());
        assertEquals(p.groups().get(0).length(), p.groups().get(1).bufferOffset());
        assertEquals(0, p.tensor("empty").orElseThrow().nbytes());
        assertEquals(2, p.fileCount());
        checkInvariants(p);

        ReadPlan onlyEmpty = ReadPlan.of(ModelFiles.of(a, b), TensorSelector.names("empty"), Placement.all(3),
                ReadPlan.Options.defaults());
        assertTrue(onlyEmpty.bufferBytes().isEmpty(), "an empty tensor needs no buffer");
        assertEquals(List.of(3), List.copyOf(onlyEmpty.targets()));
        assertTrue(onlyEmpty.requests().isEmpty());
    }

    @Test
    void optionsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> new ReadPlan.Options(-1, 4096, 1 << 20));
        assertThrows(IllegalArgumentException.class, () -> new ReadPlan.Options(0, 3000, 1 << 20));
        assertThrows(IllegalArgumentException.class, () -> new ReadPlan.Options(0, 4096, 5000));
    }

    /** Random models, selections, gaps and placements: the plan's invariants always hold. */
    @Test
    void randomPlansKeepTheirInvariants() throws IOException {
        SplittableRandom rnd = new SplittableRandom(42);
        for (int round = 0; round < 30; round++) {
            List<SafetensorsWriter.Spec> specs = new ArrayList<>();
            int n = 1 + rnd.nextInt(25);
            for (int i = 0; i < n; i++) {
                Dtype d = Dtype.values()[rnd.nextInt(Dtype.values().length)];
                long elems = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(1, 20_000);
                if (d.bits() < 8) {
                    elems = elems / 4 * 4;
                }
                specs.add(spec("t" + i, d, elems));
            }
            ModelFiles m = model("r" + round + ".safetensors", specs);
            for (int k = 0; k < 10; k++) {
                long seed = rnd.nextLong();
                TensorSelector sel = name -> (name.hashCode() ^ seed) % 3 != 0;
                int targets = 1 + rnd.nextInt(3);
                Placement pl = t -> Math.floorMod(t.name().hashCode() + seed, targets) - 1;
                ReadPlan.Options o = new ReadPlan.Options(rnd.nextInt(3) * rnd.nextLong(0, 50_000), KIB4,
                        KIB4 * rnd.nextInt(1, 40));
                checkInvariants(ReadPlan.of(m, sel, pl, o));
            }
        }
    }

    /**
     * Random models of several files, selections and placements over up to four targets: the
     * plan's invariants hold, and its tensors come in the model's order.
     */
    @Test
    void randomSeveralFilePlansKeepTheModelsOrder() throws IOException {
        SplittableRandom rnd = new SplittableRandom(7);
        for (int round = 0; round < 20; round++) {
            int files = 2 + rnd.nextInt(3);
            SafetensorsHeader[] headers = new SafetensorsHeader[files];
            for (int f = 0; f < files; f++) {
                List<SafetensorsWriter.Spec> specs = new ArrayList<>();
                int n = 1 + rnd.nextInt(12);
                for (int i = 0; i < n; i++) {
                    specs.add(spec("f" + f + ".t" + i, Dtype.F16, rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(1, 9_000)));
                }
                headers[f] = SafetensorsParser.standard().parse(TestFiles.valid(
                        dir.resolve("s" + round + "-" + f + ".safetensors"), Map.of(), specs));
            }
            ModelFiles m = ModelFiles.of(headers);
            for (int k = 0; k < 8; k++) {
                long seed = rnd.nextLong();
                TensorSelector sel = name -> (name.hashCode() ^ seed) % 4 != 0;
                int targets = 1 + rnd.nextInt(4);
                Placement pl = t -> Math.floorMod(t.name().hashCode() * 31 + seed, targets) - 1;
                ReadPlan p = ReadPlan.of(m, sel, pl, new ReadPlan.Options(rnd.nextInt(2) * 8192, KIB4, KIB4 * 4));
                checkInvariants(p);
                List<String> expected = new ArrayList<>();
                for (SafetensorsHeader h : m.files()) {
                    for (TensorInfo t : h.tensors()) {
                        if (sel.test(t.name())) {
                            expected.add(t.name());
                        }
                    }
                }
                assertEquals(expected, List.copyOf(p.tensors().keySet()), "the plan's order is the model's");
                for (int target : p.targets()) {
                    List<SafetensorsHeader> on = new ArrayList<>();
                    for (SafetensorsHeader h : m.files()) {
                        if (h.tensors().stream().anyMatch(t -> sel.test(t.name()) && pl.targetOf(t) == target)) {
                            on.add(h);
                        }
                    }
                    assertEquals(on, p.files(target), "files of target " + target + ", in the model's order");
                }
            }
        }
    }

    static void checkInvariants(ReadPlan p) {
        long a = p.options().alignment();
        Map<Integer, Long> used = new HashMap<>();
        Map<ReadPlan.PlannedTensor, ReadPlan.ReadGroup> groupOf = new HashMap<>();
        for (ReadPlan.ReadGroup g : p.groups()) {
            assertEquals(0, g.fileOffset() % a, "aligned file offset");
            assertEquals(0, g.length() % a, "aligned length");
            assertEquals(0, g.bufferOffset() % a, "aligned slot");
            assertTrue(g.neededLength() <= g.length() && g.length() - g.neededLength() < a, "tail under one unit");
            assertTrue(g.fileOffset() + g.neededLength() <= g.file().fileSize(), "needed bytes lie in the file");
            assertEquals(used.getOrDefault(g.target(), 0L), g.bufferOffset(), "slots are packed in order");
            used.merge(g.target(), g.length(), Long::sum);
            for (ReadPlan.PlannedTensor t : g.tensors()) {
                groupOf.put(t, g);
                assertTrue(t.fileOffset() >= g.fileOffset()
                        && t.fileOffset() + t.nbytes() <= g.fileOffset() + g.neededLength(), t.name() + " inside its group");
                assertEquals(g.bufferOffset() + (t.fileOffset() - g.fileOffset()), t.bufferOffset(), t.name() + " view");
                assertEquals(g.target(), t.target());
            }
        }
        assertEquals(used, new HashMap<>(p.bufferBytes()));
        long bytes = 0;
        Map<Integer, List<SafetensorsHeader>> files = new HashMap<>();
        List<SafetensorsHeader> fileOrder = new ArrayList<>();
        ReadPlan.PlannedTensor previous = null;
        for (ReadPlan.PlannedTensor t : p.tensors().values()) {
            if (t.nbytes() > 0) {
                assertTrue(groupOf.containsKey(t), t.name() + " has a group");
            }
            bytes += t.nbytes();
            List<SafetensorsHeader> on = files.computeIfAbsent(t.target(), k -> new ArrayList<>());
            if (!on.contains(t.file())) {
                on.add(t.file());
            }
            // the tensors in the model's order, whatever their targets: file by file, by offset
            if (previous == null || previous.file() != t.file()) {
                assertTrue(!fileOrder.contains(t.file()), t.name() + ": its file came before");
                fileOrder.add(t.file());
            } else {
                assertTrue(previous.info().begin() <= t.info().begin(), t.name() + " after " + previous.name());
            }
            previous = t;
        }
        assertEquals(bytes, p.tensorBytes());
        for (int target : p.targets()) {
            assertEquals(files.getOrDefault(target, List.of()), p.files(target), "files of target " + target);
        }
        assertEquals(List.of(), p.files(Integer.MAX_VALUE));
        // requests tile the groups, bounded, with the needed bytes at the front
        int r = 0;
        for (ReadPlan.ReadGroup g : p.groups()) {
            long covered = 0;
            long needed = 0;
            while (covered < g.length()) {
                ReadPlan.ReadRequest q = p.requests().get(r++);
                assertEquals(g.fileOffset() + covered, q.fileOffset());
                assertEquals(g.bufferOffset() + covered, q.bufferOffset());
                assertTrue(q.length() <= p.options().maxRequestBytes() && q.length() % a == 0);
                assertTrue(q.neededLength() <= q.length());
                covered += q.length();
                needed += q.neededLength();
            }
            assertEquals(g.length(), covered);
            assertEquals(g.neededLength(), needed);
        }
        assertEquals(p.requests().size(), r);
    }
}
