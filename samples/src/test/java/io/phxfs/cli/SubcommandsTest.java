package io.phxfs.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.Command;

/**
 * A command line registers only the subcommand it names (picocli's model of all of them is a
 * quarter of a second of interpreted start-up): every other way in must still see them all.
 */
class SubcommandsTest {
    private static List<String> names(boolean withHidden) {
        List<String> names = new ArrayList<>();
        for (Class<?> c : PhoenixCli.SUBCOMMANDS) {
            Command a = c.getAnnotation(Command.class);
            if (withHidden || !a.hidden()) {
                names.add(a.name());
            }
        }
        return names;
    }

    @Test
    void everySubcommandHasItsOwnName() {
        List<String> all = names(true);
        assertEquals(all.size(), new HashSet<>(all).size(), all.toString());
        assertTrue(all.containsAll(List.of("load", "bench", "info", "serve", "kv", "help", "train-startup")), all.toString());
    }

    @Test
    void theTopLevelHelpListsThemAllInOrder() {
        for (String[] args : new String[][] {{"--help"}, {"help"}}) {
            Cli r = Cli.run(args);
            assertEquals(0, r.exit(), r.toString());
            int at = -1;
            for (String name : names(false)) {
                int i = r.out().indexOf("\n  " + name + " ");
                assertTrue(i > at, "'" + name + "' missing or out of order in " + String.join(" ", args) + ":\n" + r.out());
                at = i;
            }
            assertTrue(!r.out().contains("train-startup"), r.out());
        }
    }

    @Test
    void eachSubcommandAloneParsesItsOwnOptions() {
        for (String name : names(false)) { // the hidden train-startup has no --help
            if (name.equals("help")) {
                continue;
            }
            Cli r = Cli.run(name, "--help");
            assertEquals(0, r.exit(), name + ": " + r);
            assertTrue(r.out().contains("Usage: phoenix " + name), name + ": " + r);
        }
        Cli kv = Cli.run("kv", "bench", "--help");
        assertEquals(0, kv.exit(), kv.toString());
        assertTrue(kv.out().contains("Usage: phoenix kv bench"), kv.toString());
    }

    @Test
    void helpOfASubcommandAndATypoStillKnowThemAll() {
        Cli help = Cli.run("help", "load");
        assertEquals(0, help.exit(), help.toString());
        assertTrue(help.out().contains("Usage: phoenix load"), help.toString());

        Cli typo = Cli.run("lod", "model");
        assertEquals(PhoenixCli.EXIT_INVALID, typo.exit(), typo.toString());
        assertTrue(typo.err().contains("load"), "no suggestion: " + typo);

        Cli none = Cli.run();
        assertEquals(PhoenixCli.EXIT_INVALID, none.exit(), none.toString());
        assertTrue(none.err().contains("Missing required subcommand"), none.toString());
    }
}
