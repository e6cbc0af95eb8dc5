package io.phxfs.safetensors;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import static io.phxfs.safetensors.TestFiles.spec;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Closing a host-memory model: twice is harmless, and any use afterwards is a Java exception. */
@Tag("io")
class LoadedModelCloseTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "mapHost={0}")
    @ValueSource(booleans = {false, true})
    void closeTwiceThenUseFailsCleanly(boolean mapHost) throws IOException {
        Path f = TestFiles.valid(dir.resolve("m.safetensors"), Map.of(),
                List.of(spec("a", Dtype.F32, 300), spec("b", Dtype.BF16, 7, 5)));
        LoadedModel m = WeightLoader.builder().toHost().mapHost(mapHost).build().load(f);
        WeightLoaderTest.assertContents(m);
        LoadedTensor a = m.tensor("a").orElseThrow();
        MemorySegment view = a.segment().orElseThrow(); // taken before close: must not outlive the memory

        m.close();
        m.close(); // the javadoc promises a no-op

        IllegalStateException e = assertThrows(IllegalStateException.class, a::toByteArray);
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, a::segment);
        assertThrows(IllegalStateException.class, a::address);
        // the segment handed out earlier is scoped to the memory: an access is refused, not a SIGSEGV
        assertThrows(IllegalStateException.class, () -> view.get(ValueLayout.JAVA_BYTE, 0));
        assertTrue(m.buffers().values().stream().allMatch(b -> b.isClosed()));
    }
}
