package io.phxfs.safetensors;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A seeded property test: random mutations of valid files (bytes flipped, numbers and names
 * replaced, entries dropped or duplicated, lengths changed, truncations, appended bytes).
 * The parser may accept a mutant or throw {@link SafetensorsFormatException}, nothing else;
 * an accepted mutant must load, and every loaded byte must equal the file's byte at the
 * tensor's offset. The surefire heap is small (256 MiB), so an allocation sized by a mutated
 * number would fail here.
 */
class MutationTest {
    private static final int SEEDS = 50;
    private static final int PER_SEED = 40;
    private static final Pattern NUMBER = Pattern.compile("-?\\d+");
    private static final Pattern STRING = Pattern.compile("\"[^\"]*\"");
    private static final String[] NUMBERS = {"0", "1", "-1", "7", "4096", "9223372036854775807", "9223372036854775808",
            "18446744073709551615", "18446744073709551616", "1.5", "1e3", "-0", "00", "4294967296", "99999999999"};
    private static final String[] STRINGS = {"\"F4\"", "\"F6_E2M3\"", "\"BF16\"", "\"C64\"", "\"F8_E8M0\"", "\"U64\"",
            "\"bogus\"", "\"\"", "\"dtype\"", "\"shape\"", "\"data_offsets\"", "\"__metadata__\"", "\"\\ud800\"",
            "\"\\u0000\"", "null", "[]", "{}", "1"};

    private static Path dir;
    private static List<byte[]> seeds;
    private static final java.util.concurrent.atomic.AtomicInteger accepted = new java.util.concurrent.atomic.AtomicInteger();
    private static final java.util.concurrent.atomic.AtomicInteger rejected = new java.util.concurrent.atomic.AtomicInteger();

    @BeforeAll
    static void seeds() throws IOException {
        dir = Files.createTempDirectory("phx-mutants");
        seeds = validFiles(dir);
    }

    /** The valid files mutants are made from: a fixture and two written here (F4/F6 packing included). */
    static List<byte[]> validFiles(Path dir) throws IOException {
        List<byte[]> seeds = new ArrayList<>();
        seeds.add(Files.readAllBytes(Fixtures.file("dtypes.safetensors")));
        seeds.add(Files.readAllBytes(TestFiles.valid(dir.resolve("s1.safetensors"), Map.of("format", "pt"),
                List.of(spec("a", Dtype.F32, 2, 3), spec("b", Dtype.F4, 8), spec("c", Dtype.BF16, 0, 5),
                        spec("d", Dtype.F6_E3M2, 4), spec("e", Dtype.U8, 5)))));
        seeds.add(Files.readAllBytes(TestFiles.valid(dir.resolve("s2.safetensors"), Map.of(),
                List.of(spec("x", Dtype.I64, 3), spec("y", Dtype.C64, 1, 1)))));
        return seeds;
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TempDirs.delete(dir);
        // both paths must be exercised: mutants that still parse (and load) and mutants refused
        int a = accepted.get();
        int r = rejected.get();
        if (a + r == SEEDS * PER_SEED && (a < 20 || r < 1000)) {
            fail("mutations are not mixed enough: " + a + " accepted, " + r + " refused");
        }
    }

    static IntStream seedNumbers() {
        return IntStream.range(0, SEEDS);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seedNumbers")
    void onlyFormatExceptionsEscape(int seed) throws IOException {
        SplittableRandom rnd = new SplittableRandom(0xC0FFEE + seed);
        WeightLoader loader = WeightLoader.builder().toHost()
                .planOptions(new ReadPlan.Options(rnd.nextInt(3) * 64L, 4096, 4096 * (1 + rnd.nextInt(4)))).build();
        for (int i = 0; i < PER_SEED; i++) {
            byte[] base = seeds.get(rnd.nextInt(seeds.size()));
            if (checkMutant(base, rnd, loader, dir.resolve("m" + seed + "-" + i + ".safetensors"), "seed " + seed + " mutant " + i)) {
                accepted.incrementAndGet();
            } else {
                rejected.incrementAndGet();
            }
        }
    }

    /**
     * Mutates {@code base} once, writes the mutant to {@code f} and checks it: refused with a
     * one-line {@link SafetensorsFormatException}, or accepted and then loaded with every byte
     * right. Anything else fails. Returns whether the mutant was accepted.
     */
    static boolean checkMutant(byte[] base, SplittableRandom rnd, WeightLoader loader, Path f, String label) throws IOException {
        StringBuilder how = new StringBuilder();
        byte[] mutant = mutate(base, rnd, how);
        Files.write(f, mutant);
        String what = label + " (" + how + ")";
        SafetensorsHeader h;
        try {
            h = SafetensorsParser.standard().parse(f);
        } catch (SafetensorsFormatException e) {
            if (e.getMessage().contains("\n")) {
                fail(what + ": message spans lines: " + e.getMessage());
            }
            Files.delete(f);
            return false;
        } catch (Throwable t) {
            throw new AssertionError(what + ": unexpected " + t, t);
        }
        try (LoadedModel m = loader.load(ModelFiles.of(h))) {
            for (LoadedTensor t : m.tensors().values()) {
                long at = h.fileOffset(t.info());
                byte[] want = Arrays.copyOfRange(mutant, (int) at, (int) (at + t.nbytes()));
                MemorySegment got = t.segment().orElseThrow();
                assertEquals(-1, MemorySegment.ofArray(want).mismatch(got), what + ": bytes of " + t);
            }
        } catch (Throwable t) {
            throw new AssertionError(what + ": accepted, but loading failed: " + t, t);
        }
        Files.delete(f);
        return true;
    }

    static byte[] mutate(byte[] base, SplittableRandom rnd, StringBuilder how) {
        int headerLen = (int) ByteBuffer.wrap(base).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        String header = new String(base, 8, headerLen, StandardCharsets.UTF_8);
        byte[] data = Arrays.copyOfRange(base, 8 + headerLen, base.length);
        int kind = rnd.nextInt(9);
        how.append("kind ").append(kind);
        switch (kind) {
            case 0 -> { // flip bytes anywhere
                byte[] b = base.clone();
                for (int k = 1 + rnd.nextInt(4); k > 0; k--) {
                    int at = rnd.nextInt(b.length);
                    b[at] ^= (byte) (1 << rnd.nextInt(8));
                    how.append(", flip @").append(at);
                }
                return b;
            }
            case 1 -> { // truncate
                int n = rnd.nextInt(base.length);
                how.append(", truncate to ").append(n);
                return Arrays.copyOf(base, n);
            }
            case 2 -> { // append
                int n = 1 + rnd.nextInt(64);
                how.append(", append ").append(n);
                byte[] b = Arrays.copyOf(base, base.length + n);
                for (int i = base.length; i < b.length; i++) {
                    b[i] = (byte) rnd.nextInt(256);
                }
                return b;
            }
            case 3 -> { // the length prefix
                long n = switch (rnd.nextInt(4)) {
                    case 0 -> rnd.nextLong();
                    case 1 -> headerLen + rnd.nextInt(-16, 17);
                    case 2 -> rnd.nextLong(0, 200_000_000L);
                    default -> base.length - 8 + rnd.nextInt(-2, 3);
                };
                how.append(", length ").append(Long.toUnsignedString(n));
                byte[] b = base.clone();
                ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putLong(0, n);
                return b;
            }
            case 4 -> { // a number replaced
                String h = replaceOne(header, NUMBER, rnd, rnd.nextBoolean() ? NUMBERS[rnd.nextInt(NUMBERS.length)]
                        : Long.toString(rnd.nextLong(0, 5000)), how);
                return file(h, data);
            }
            case 5 -> { // a string replaced
                return file(replaceOne(header, STRING, rnd, STRINGS[rnd.nextInt(STRINGS.length)], how), data);
            }
            case 6 -> { // a stretch of the header deleted or duplicated
                int a = rnd.nextInt(header.length());
                int b = Math.min(header.length(), a + 1 + rnd.nextInt(60));
                String h = rnd.nextBoolean() ? header.substring(0, a) + header.substring(b)
                        : header.substring(0, b) + header.substring(a);
                how.append(rnd.nextBoolean() ? ", cut " : ", dup ").append(a).append("..").append(b);
                return file(h, data);
            }
            case 7 -> { // random bytes inserted into the header, length kept true
                byte[] h = header.getBytes(StandardCharsets.UTF_8);
                int at = rnd.nextInt(h.length);
                byte[] ins = new byte[1 + rnd.nextInt(8)];
                for (int i = 0; i < ins.length; i++) {
                    ins[i] = (byte) rnd.nextInt(256);
                }
                byte[] nh = new byte[h.length + ins.length];
                System.arraycopy(h, 0, nh, 0, at);
                System.arraycopy(ins, 0, nh, at, ins.length);
                System.arraycopy(h, at, nh, at + ins.length, h.length - at);
                how.append(", insert @").append(at);
                return TestFiles.raw(nh.length, nh, data);
            }
            default -> { // two numbers swapped (offsets of different tensors, shape against offset)
                List<int[]> spans = new ArrayList<>();
                Matcher m = NUMBER.matcher(header);
                while (m.find()) {
                    spans.add(new int[] {m.start(), m.end()});
                }
                if (spans.size() < 2) {
                    return base.clone();
                }
                int[] x = spans.get(rnd.nextInt(spans.size()));
                int[] y = spans.get(rnd.nextInt(spans.size()));
                if (x[0] > y[0]) {
                    int[] t = x;
                    x = y;
                    y = t;
                }
                if (x[0] == y[0]) {
                    return base.clone();
                }
                String h = header.substring(0, x[0]) + header.substring(y[0], y[1]) + header.substring(x[1], y[0])
                        + header.substring(x[0], x[1]) + header.substring(y[1]);
                how.append(", swap @").append(x[0]).append(" @").append(y[0]);
                return file(h, data);
            }
        }
    }

    private static String replaceOne(String header, Pattern p, SplittableRandom rnd, String with, StringBuilder how) {
        List<int[]> spans = new ArrayList<>();
        Matcher m = p.matcher(header);
        while (m.find()) {
            spans.add(new int[] {m.start(), m.end()});
        }
        if (spans.isEmpty()) {
            return header;
        }
        int[] s = spans.get(rnd.nextInt(spans.size()));
        how.append(", ").append(header, s[0], s[1]).append(" -> ").append(with);
        return header.substring(0, s[0]) + with + header.substring(s[1]);
    }

    private static byte[] file(String header, byte[] data) {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        return TestFiles.raw(h.length, h, data);
    }
}
