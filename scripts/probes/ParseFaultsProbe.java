import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What a header parse costs the parsing thread in a fresh JVM: its minor page faults (from
 * /proc/thread-self/stat, field 10) and milliseconds, for SafetensorsParser.parse of FILE, N
 * times. On a VM whose fresh pages cost microseconds on first touch, the faults (which follow
 * from the parse's allocation) are much of a cold parse's time. Compares builds when run with
 * each one's jar (class path, a fresh JVM each):
 *   java -cp samples/target/phoenix-cli-nodjl.jar scripts/probes/ParseFaultsProbe.java FILE [N]
 */
public class ParseFaultsProbe {
    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        Class<?> parser = Class.forName("io.phxfs.safetensors.SafetensorsParser");
        Object standard = parser.getMethod("standard").invoke(null);
        Method parse = parser.getMethod("parse", Path.class);
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < n; i++) {
            long f0 = minorFaults();
            long t0 = System.nanoTime();
            parse.invoke(standard, file);
            long t1 = System.nanoTime();
            long f1 = minorFaults();
            out.append(String.format("parse %d: %.2f ms, %d faults%n", i + 1, (t1 - t0) / 1e6, f1 - f0));
        }
        System.out.print(out);
    }

    private static long minorFaults() throws Exception {
        String s = Files.readString(Path.of("/proc/thread-self/stat"));
        return Long.parseLong(s.substring(s.lastIndexOf(')') + 2).split(" ")[7]);
    }
}
