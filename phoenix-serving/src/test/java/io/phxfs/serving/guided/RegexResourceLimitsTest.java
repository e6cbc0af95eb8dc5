package io.phxfs.serving.guided;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A short pattern cannot make the server build an automaton without bound: each is refused, quickly (seen exhausting the heap or the CPU on 7f64370). */
class RegexResourceLimitsTest {
    // ---- (e) resources: construction before the determinize work limit is unbounded ----

    @Test
    void deepNestingIsARefusalNotAStackOverflow() {
        String p = "(".repeat(20_000) + "a" + ")".repeat(20_000);
        assertThrows(IllegalArgumentException.class, () -> TextGrammar.regex(p));
    }

    @Test
    void nestedBoundedRepeatIsRefusedQuickly() {
        // 24 characters; Operations.repeat's epsilons are quadratic before determinize's limit is consulted
        assertTimeoutPreemptively(Duration.ofSeconds(10),
                () -> assertThrows(IllegalArgumentException.class, () -> TextGrammar.regex("([a-z]{0,1000}){0,1000}")));
    }

    @Test
    void nestedCountedRepeatIsRefusedNotOutOfMemory() {
        // 2 * 10^7 states: each bound passes MAX_REPEAT; a deterministic chain skips the work limit altogether
        try {
            TextGrammar.regex("((a{1000}){1000}){20}");
            fail("built a 20-million-state automaton for a 22-character pattern");
        } catch (OutOfMemoryError e) {
            fail("OutOfMemoryError (surefire's -Xmx1g) instead of a refusal: " + e);
        } catch (IllegalArgumentException expected) {
            // refused
        }
    }

}
