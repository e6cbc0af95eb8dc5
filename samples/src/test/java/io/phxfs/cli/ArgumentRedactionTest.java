package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Usage errors never print a secret: the value of a secret-looking option, or of a mistyped
 * option that kept it from its own (picocli quotes unmatched arguments in its messages).
 */
class ArgumentRedactionTest {
    private static final String KEY = "sk-live-7f3a9c1e55d2";

    @Test
    void aMistypedKeyOptionDoesNotPrintTheKey() {
        for (String[] args : new String[][] {
            {"serve", "--api-kye", KEY, "/nonexistent-model"},
            {"serve", "--api-kye=" + KEY, "/nonexistent-model"},
            {"serve", "/nonexistent-model", "--api-key"},
            {"serve", "--cache-sallt", KEY},
            {"kv", "bench", "--redis-pasword", KEY},
        }) {
            Cli r = Cli.run(args);
            assertEquals(2, r.exit(), r::toString);
            assertFalse(r.toString().contains(KEY), "the secret in: " + r);
            assertTrue(r.err().contains("Try '"), r::toString);
        }
    }

    @Test
    void otherUsageErrorsStillNameWhatWasWrong() {
        Cli r = Cli.run("load", "--devise", "0", "/tmp/x");
        assertEquals(2, r.exit(), r::toString);
        assertTrue(r.err().contains("--devise"), r::toString);
    }
}
