package io.phxfs.serving.text;

import static org.junit.jupiter.api.Assertions.assertEquals;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.CharRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

/** transformers' clean_up_tokenization, whole and streamed. */
class SpaceCleanupTest {
    @Test
    void appliesTransformersReplacements() {
        assertEquals("a. b? c! d, e'f can't I'm it's we've you're",
                SpaceCleanup.apply("a . b ? c ! d , e ' f ca n't I 'm it 's we 've you 're"));
        assertEquals("no change", SpaceCleanup.apply("no change"));
    }

    /** Any way of cutting a text into pieces streams to the cleanup of the whole text. */
    @Property(tries = 2000)
    void streamingEqualsWhole(@ForAll @StringLength(max = 40) @CharRange(from = ' ', to = ' ')
            @CharRange(from = '\'', to = '\'') @CharRange(from = '.', to = '.') @CharRange(from = 'n', to = 'n')
            @CharRange(from = 't', to = 't') @CharRange(from = 's', to = 's') @CharRange(from = 'm', to = 'm')
            @CharRange(from = 'v', to = 'v') @CharRange(from = 'e', to = 'e') @CharRange(from = 'r', to = 'r')
            @CharRange(from = '?', to = '?') @CharRange(from = 'x', to = 'x') String text,
            @ForAll @Size(max = 10) java.util.List<@net.jqwik.api.constraints.IntRange(min = 0, max = 40) Integer> cuts) {
        SpaceCleanup stream = new SpaceCleanup();
        StringBuilder out = new StringBuilder();
        int from = 0;
        for (int cut : cuts.stream().sorted().toList()) {
            int to = Math.min(cut, text.length());
            if (to >= from) {
                out.append(stream.push(text.substring(from, to)));
                from = to;
            }
        }
        out.append(stream.push(text.substring(from)));
        out.append(stream.flush());
        assertEquals(SpaceCleanup.apply(text), out.toString());
    }
}
