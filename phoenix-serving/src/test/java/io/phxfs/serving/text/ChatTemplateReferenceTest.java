package io.phxfs.serving.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The committed expected.json is what chat-templates/render_reference.py makes from the
 * committed cases with Python's jinja2 (checked where python3 with jinja2 3.1 is installed;
 * elsewhere ChatTemplateJinja2Test still checks ChatTemplate against the committed copy).
 */
class ChatTemplateReferenceTest {
    @Test
    void expectedRendersAreWhatJinja2Gives(@TempDir Path dir) throws Exception {
        Path script = resource("render_reference.py");
        String version = jinja2Version();
        assumeTrue(version != null && version.startsWith("3.1."),
                "python3 with jinja2 3.1 not found (" + version + "): expected.json is not regenerated");
        Path out = dir.resolve("expected.json");
        Process p = new ProcessBuilder("python3", script.toString(), "--out", out.toString())
                .redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "render_reference.py did not finish");
        assertEquals(0, p.exitValue(), log);
        ObjectMapper json = new ObjectMapper();
        JsonNode fresh = json.readTree(out.toFile());
        JsonNode committed = json.readTree(resource("expected.json").toFile());
        assertEquals(committed.get("snippets"), fresh.get("snippets"),
                "snippets.txt changed: run python3 render_reference.py and commit expected.json");
        assertEquals(committed.get("templates"), fresh.get("templates"),
                "templates or cases changed: run python3 render_reference.py and commit expected.json");
    }

    private static Path resource(String name) throws URISyntaxException {
        return Path.of(ChatTemplateReferenceTest.class.getResource("/chat-templates/" + name).toURI());
    }

    /** The installed jinja2's version, or null without python3 or jinja2. */
    private static String jinja2Version() throws InterruptedException {
        try {
            Process p = new ProcessBuilder("python3", "-c", "import jinja2; print(jinja2.__version__)")
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0 ? out : null;
        } catch (IOException e) {
            return null;
        }
    }
}
