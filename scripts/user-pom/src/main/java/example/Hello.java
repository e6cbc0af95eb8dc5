package example;

import io.phxfs.core.Phoenix;
import io.phxfs.core.PhxFile;
import io.phxfs.core.OpenMode;
import io.phxfs.core.RegisteredBuffer;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads a small file into host memory through Phoenix and prints the versions it ran with. */
public class Hello {
    public static void main(String[] args) throws Exception {
        Path file = Files.createTempFile("phoenix-user", ".bin");
        try {
            byte[] data = new byte[8192];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) (i * 31);
            }
            Files.write(file, data);
            Phoenix phx = Phoenix.open();
            try (RegisteredBuffer buf = phx.host().allocate(data.length);
                 PhxFile f = PhxFile.open(file, OpenMode.READ)) {
                long n = f.read(buf, 0, data.length, 0);
                byte last = buf.segment().orElseThrow().get(ValueLayout.JAVA_BYTE, data.length - 1);
                if (n != data.length || last != data[data.length - 1]) {
                    throw new AssertionError("read " + n + " bytes, last byte " + last);
                }
            }
            System.out.println("phoenix-core " + Phoenix.bindingsVersion() + ", libphoenix " + phx.version() + ": read ok");
        } finally {
            Files.delete(file);
        }
    }
}
