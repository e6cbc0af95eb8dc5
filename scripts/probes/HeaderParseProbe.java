import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * The safetensors byte reader alone on one file's header, in a bare JVM: the UTF-8 check and
 * FastHeaderJson.parse, 12 times, each timed (both are package-private: reached by reflection
 * from the class path). Compares readers of two builds when run with each one's jar:
 *   java -cp samples/target/phoenix-cli-nodjl.jar scripts/probes/HeaderParseProbe.java FILE
 */
public class HeaderParseProbe {
    public static void main(String[] args) throws Exception {
        // the length prefix and the header only: a checkpoint is larger than any array
        long size;
        byte[] h;
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(Path.of(args[0]))) {
            size = ch.size();
            ByteBuffer prefix = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(prefix, 0);
            h = new byte[(int) prefix.getLong(0)];
            ByteBuffer hb = ByteBuffer.wrap(h);
            while (hb.hasRemaining() && ch.read(hb, 8 + hb.position()) > 0) {
                // reads until the header is in
            }
        }
        Method utf8 = Class.forName("io.phxfs.safetensors.Utf8").getDeclaredMethod("firstInvalid", byte[].class, int.class);
        utf8.setAccessible(true);
        Method parse = Class.forName("io.phxfs.safetensors.FastHeaderJson").getDeclaredMethod("parse", byte[].class, int.class, long.class);
        parse.setAccessible(true);
        for (int i = 0; i < 12; i++) {
            long t0 = System.nanoTime();
            utf8.invoke(null, h, h.length);
            long t1 = System.nanoTime();
            if (parse.invoke(null, h, h.length, size - 8L - h.length) == null) {
                throw new IllegalStateException("the byte reader stood aside: not the usual header shape");
            }
            long t2 = System.nanoTime();
            System.out.printf("utf8 %.2f ms, fast json %.2f ms (%d bytes)%n", (t1 - t0) / 1e6, (t2 - t1) / 1e6, h.length);
        }
    }
}
