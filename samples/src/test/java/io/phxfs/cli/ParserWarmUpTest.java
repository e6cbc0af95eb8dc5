package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.phxfs.cli.ParserWarmUp.Kind;
import org.junit.jupiter.api.Test;

/**
 * The warm-up's kind, judged from a load's raw arguments before picocli parses them: a host load
 * must not get the device warm-up (on a 2-core machine it made `load --host` 0.4-0.5 s longer),
 * and a device load must keep it (it runs while the device opens).
 */
class ParserWarmUpTest {
    private static Kind kind(boolean acceleratorNode, String... args) {
        return ParserWarmUp.kindOf(args, acceleratorNode);
    }

    @Test
    void namedTargetsDecideWhateverTheMachine() {
        for (boolean node : new boolean[] {true, false}) {
            assertEquals(Kind.HOST_MAPPED, kind(node, "model", "--host"));
            assertEquals(Kind.HOST_MAPPED, kind(node, "--host", "model", "--json"));
            assertEquals(Kind.HOST_COPY, kind(node, "model", "--host", "--copy"));
            assertEquals(Kind.HOST_COPY, kind(node, "model", "--copy"));
            assertEquals(Kind.HOST_COPY, kind(node, "model", "--host", "--direct"));
            assertEquals(Kind.HOST_COPY, kind(node, "model", "--host", "--buffered"));
            assertEquals(Kind.DEVICE, kind(node, "model", "--device", "0"));
            assertEquals(Kind.DEVICE, kind(node, "model", "--device=1"));
            assertEquals(Kind.DEVICE, kind(node, "model", "--devices", "0,1"));
            assertEquals(Kind.DEVICE, kind(node, "model", "--devices=0,1", "--spread", "split"));
        }
    }

    @Test
    void anUnstatedTargetFollowsTheMachine() {
        assertEquals(Kind.DEVICE, kind(true, "model", "--json"));
        assertEquals(Kind.HOST_MAPPED, kind(false, "model", "--json"));
        assertEquals(Kind.HOST_COPY, kind(false, "model", "--direct"));
        assertEquals(Kind.DEVICE, kind(true));
    }

    @Test
    void aContradictionIsLeftToPicocli() {
        // --host with --device is refused by the command; the warm-up only must not crash on it
        assertEquals(Kind.HOST_MAPPED, kind(true, "model", "--host", "--device", "0"));
    }
}
