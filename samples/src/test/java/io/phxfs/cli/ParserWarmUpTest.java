package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.phxfs.cli.ParserWarmUp.Kind;
import io.phxfs.safetensors.Fixtures;
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

    private static boolean warmUpAlive() {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("phoenix-warm-up") && t.isAlive());
    }

    @Test
    void aLoadAdoptsTheWarmUpStartedWithItsCommandLine() {
        String model = Fixtures.file("tiny-llama").toString();
        int before = ParserWarmUp.started();
        Cli r = Cli.run("load", model, "--host", "--json");
        assertEquals(0, r.exit(), r.toString());
        assertEquals(before + 1, ParserWarmUp.started(), "a second warm-up beside the first: " + r);
        assertFalse(warmUpAlive(), "the load returned before its warm-up ended");
    }

    @Test
    void aUsageErrorWaitsForTheWarmUpAndHelpStartsNone() {
        String model = Fixtures.file("tiny-llama").toString();
        Cli bad = Cli.run("load", model, "--no-such-option");
        assertEquals(PhoenixCli.EXIT_INVALID, bad.exit(), bad.toString());
        // picocli refused it before LoadCommand ran: PhoenixCli waited for the warm-up itself
        assertFalse(warmUpAlive(), "a warm-up still running after the command returned");

        int before = ParserWarmUp.started();
        for (String help : new String[] {"--help", "-h", "--version", "-V"}) {
            Cli r = Cli.run("load", model, help);
            assertEquals(0, r.exit(), help + ": " + r);
        }
        assertEquals(before, ParserWarmUp.started(), "help or the version started a warm-up");
    }
}
