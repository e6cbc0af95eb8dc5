// Six loads of one checkpoint into host memory in one JVM, with a HostMemoryPool ("pool") or
// fresh memory each load ("fresh"), each timed (issue 13, host copies; docs/benchmarks.md):
//   java --enable-native-access=ALL-UNNAMED -cp samples/target/phoenix-cli.jar scripts/probes/PoolBench.java FILE pool|fresh
import io.phxfs.core.*;
import io.phxfs.safetensors.*;
import java.nio.file.Path;
public class PoolBench {
    public static void main(String[] a) throws Exception {
        Path p = Path.of(a[0]);
        long size = java.nio.file.Files.size(p);
        Phoenix phx = Phoenix.open();
        HostMemoryPool pool = phx.host().pool(Long.MAX_VALUE);
        WeightLoader pooled = WeightLoader.builder().toHost().writable(true).hostMemory(pool).build();
        WeightLoader fresh = WeightLoader.builder().toHost().writable(true).build();
        String mode = a.length > 1 ? a[1] : "pool";
        for (int i = 0; i < 6; i++) {
            long t0 = System.nanoTime();
            try (LoadedModel m = (mode.equals("pool") ? pooled : fresh).load(p)) {
                System.out.printf("%s load %d: %.2f GB/s%n", mode, i, size / ((System.nanoTime() - t0) / 1e9) / 1e9);
            }
        }
        pool.close();
    }
}
